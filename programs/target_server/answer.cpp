#include "answer.hpp"

#include "cpu_burn.hpp"
#include "io_worker.hpp"

namespace loadlab::target {

Answer decide_answer(bool stats, const RequestKnobs& knobs, const SessionEnv& env, Random& random) {
  Answer answer;
  if (stats) {
    answer.kind = Answer::Kind::stats;
    return answer;
  }
  if (!knobs.error.empty()) {
    answer.kind = Answer::Kind::bad_knob;
    answer.status = 400;
    return answer;
  }
  answer.status = knobs.status.value_or(env.responses->status());
  answer.body_size = knobs.body_size;
  if (env.stall->enabled()) env.stall->note_request(std::chrono::steady_clock::now());
  burn_cpu(knobs.work.value_or(env.work));
  const DelaySpec& delay = knobs.delay ? *knobs.delay : env.delay;
  if (!delay.zero()) answer.delay = sample_delay(delay, random);
  return answer;
}

AnswerContent answer_content(const Answer& answer, const RequestKnobs& knobs, const SessionEnv& env,
                             std::string& text) {
  AnswerContent content;
  content.status = answer.status;
  switch (answer.kind) {
    case Answer::Kind::stats:
      text = stats_json(count_stats(*env.workers));
      content.content_type = "application/json";
      content.bytes = text;
      content.length = text.size();
      return content;
    case Answer::Kind::bad_knob:
      text = knobs.error + "\n";
      content.bytes = text;
      content.length = text.size();
      return content;
    case Answer::Kind::regular:
      break;
  }
  if (!status_has_body(answer.status)) return content;
  if (answer.body_size) {
    content.filler = true;
    content.length = *answer.body_size;
    return content;
  }
  content.bytes = env.responses->body();
  content.length = content.bytes.size();
  return content;
}

}  // namespace loadlab::target
