// fasthttp: the valyala/fasthttp peer of bench/target_vs_peers.sh (built in GOPATH mode from
// Debian's golang-github-valyala-fasthttp-dev). Answers any path with 200
// "Have Fun ~ Tester !", after an optional delay slept in the handler's own goroutine.
package main

import (
	"flag"
	"log"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on")
	delayMs := flag.Int("delay-ms", 0, "delay before each response, in ms")
	flag.Parse()
	body := []byte("Have Fun ~ Tester !")
	delay := time.Duration(*delayMs) * time.Millisecond
	handler := func(ctx *fasthttp.RequestCtx) {
		if delay > 0 {
			time.Sleep(delay) // parks this goroutine only
		}
		ctx.SetContentType("text/plain")
		ctx.SetBody(body)
	}
	log.Fatal(fasthttp.ListenAndServe(*addr, handler))
}
