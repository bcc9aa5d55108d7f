#!/usr/bin/env python3
"""A Localhost seccomp profile for an agent container that profiles (docs/profiles.md): a
container runtime's default profile (OCI or Docker JSON: podman's
/usr/share/containers/seccomp.json, moby's profiles/seccomp/default.json) with perf_event_open
allowed whatever the container's capabilities.

  seccomp-with-perf.py DEFAULT.json > loadlab-agent-perf.json

The defaults allow perf_event_open only with CAP_SYS_ADMIN or CAP_PERFMON, which Kubernetes
does not give a non-root container. The node's kernel.perf_event_paranoid still decides what
perf may sample: at 2 or less, the user space of the agent's own processes (its jobs).
Exit status 2 when DEFAULT.json is not a seccomp profile.
"""
import json
import sys

CALL = "perf_event_open"


def with_perf(profile):
    """The profile with every rule that names perf_event_open losing it, and one that allows it."""
    rules = []
    for rule in profile["syscalls"]:
        names = rule.get("names", [rule["name"]] if "name" in rule else [])
        others = [n for n in names if n != CALL]
        if CALL not in names:
            rules.append(rule)
        elif others:  # the rule's other calls keep their action
            rule = dict(rule, names=others)
            rule.pop("name", None)
            rules.append(rule)
    rules.append({"names": [CALL], "action": "SCMP_ACT_ALLOW"})
    return dict(profile, syscalls=rules)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            profile = json.load(f)
    except (OSError, ValueError) as e:
        print(f"seccomp-with-perf.py: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    if not isinstance(profile, dict) or "defaultAction" not in profile or not isinstance(
            profile.get("syscalls"), list):
        print(f"seccomp-with-perf.py: {sys.argv[1]} is not a seccomp profile (no defaultAction and syscalls)",
              file=sys.stderr)
        return 2
    json.dump(with_perf(profile), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
