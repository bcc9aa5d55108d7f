#!/usr/bin/env python3
"""Plays deploy/k8s for real with podman (make test-containers; issue 28).

  k8s_play_test.py --source-dir DIR --build-dir DIR [--keep-images] [--verbose]

Debian 12's podman 4.3 `kube play` takes Pods, PersistentVolumeClaims and ConfigMaps, not
DaemonSets or CronJobs, so the test renders the DaemonSet's and the CronJob's pod templates into
Pods as written (command, args, env, mounts, probes, security contexts) and does what the
cluster would have done around them, each step said where it is done:

- the images: deploy/containers/build-images.sh makes them from this build's .debs; the
  manifests' image names are mapped to them as kustomization.yaml's `images:` would be;
- the nodes: two lab nodes are one network namespace of this test, with the two node addresses
  of lab.json (on a veth to this host, 198.18.0.0/24, the benchmarking range); the agents'
  host network is that namespace, the nightly pod's network is podman's bridge, which reaches
  the nodes through this host as a pod network reaches node addresses;
- the downward API (status.hostIP, spec.nodeName), which podman 4.3 does not serve: the kubelet's
  values for each node, written in; and $(VAR) in command and args, which podman 4.3 passes
  through: expanded as the kubelet expands them;
- what the README says to edit: lab.json's node addresses, --allow-load-to, and
  LOADLAB_SCENARIO_REPO (here a file:// repository on the nightly volume);
- the Secrets: made with `podman secret create` from the README's own commands (its openssl
  block is run as it is, its `kubectl create secret generic` lines are read for names and files);
- what podman 4.3 gets wrong (Debian's podman is 4.3.1): a secret volume without `optional`
  crashes it (podman#16636: the manifests say `optional: false`, Kubernetes' default), it
  writes a Secret's `data` to the files without decoding it (podman#16625: fixed in 4.4, so
  4.3's secrets hold the files' bytes as they are), it has no projected volumes (the CronJob's
  /etc/loadlab is made as one Secret of the same files), no optional Secret that is absent
  (an empty folder, as in Kubernetes), no defaultMode and no fsGroup for a Secret's files (given
  as the kubelet would, between creating the pods and starting them), no fsGroup on a volume
  (the PVC's is given to the pods' group, as the kubelet would), and it makes a host-network pod's declared
  ports into port mappings, which it then refuses (they are left out: with the host network
  they only tell the scheduler which node ports the pod takes).

Then: both agent pods answer `loadlab agents` over mutual TLS with the token (and refuse it
without the token), and the nightly pod clones the repository, runs its scenario on the two
agents and leaves the night's run folder (result.json with every cell measured) and the history
on the volume. It removes the pods, Secrets and volumes of the manifests' names (loadlab-*)
before and after, so it is for a machine where they are not a real lab's. Exit 0 when all
holds, 1 with each failure said, 77 (skip) with one line when this machine cannot run it (not
root, no podman, podman cannot start a container).
"""
import argparse
import base64
import copy
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is missing (apt-get install python3-yaml)")
    sys.exit(77)

NODES = [("lab-node-1", "198.18.0.5"), ("lab-node-2", "198.18.0.6")]
HOST_ADDRESS = "198.18.0.1"
NODE_NET = "198.18.0.0/24"
UID = 10001  # the images' loadlab user, the manifests' runAsUser and fsGroup
NIGHTLY_VOLUME = "loadlab-nightly"  # the PVC's claimName: podman's named volume
NIGHTLY_STATE = "/var/lib/loadlab/nightly"

errors = []
verbose = False


def fail(message):
    errors.append(message)
    print(f"FAIL {message}", flush=True)


def say(message):
    print(message, flush=True)


def run(argv, check=True, timeout=600, **kw):
    if verbose:
        say("+ " + " ".join(shlex.quote(a) for a in argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exit {r.returncode}: {(r.stderr or r.stdout).strip()[-2000:]}")
    return r


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


# ---- can this machine run it ----------------------------------------------------------------


def podman_version():
    out = run(["podman", "version", "--format", "{{.Client.Version}}"]).stdout.strip()
    m = re.match(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def preflight(base_image):
    if os.geteuid() != 0:
        skip("podman's root storage and network namespaces need root")
    for tool in ("podman", "ip", "nsenter", "git"):
        if not shutil.which(tool):
            skip(f"{tool} is missing (apt-get install podman runc debootstrap iproute2 git)")
    r = run(["podman", "version", "--format", "{{.Client.Version}}"], check=False)
    if r.returncode != 0:
        skip("podman does not run here: " + ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1])
    if not shutil.which("debootstrap") and run(["podman", "image", "exists", base_image], check=False).returncode:
        skip("debootstrap is missing and there is no base image (apt-get install debootstrap)")


def check_podman_runs(work):
    """A container of /bin/true and its libraries (no image needed, so it is said before any
    build): whether this podman and its runtime can start anything here."""
    root = os.path.join(work, "probe-root")
    libs = re.findall(r"(/\S+\.so[.\d]*)", run(["ldd", "/bin/true"]).stdout)
    for path in ["/bin/true"] + libs:
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(path, dest)
    probe = ["podman", "run", "--rm", "--network", "none", "--rootfs", root, "/bin/true"]
    r = run(probe, check=False, timeout=120)
    if r.returncode != 0 and "error setting rlimit" in r.stderr:
        # A root without CAP_SYS_RESOURCE (a sandbox, as the VM this project is built on) cannot
        # raise a limit above its own, and podman asks for more open files than that: the
        # containers get this process's limits instead (processes at most pid_max).
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        files, processes = (resource.getrlimit(r)[1] for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC))
        files = 1048576 if files == resource.RLIM_INFINITY else files
        processes = pid_max if processes == resource.RLIM_INFINITY else min(processes, pid_max)
        limits = f'default_ulimits = ["nofile={files}:{files}", "nproc={processes}:{processes}"]'
        with open(os.environ["CONTAINERS_CONF"]) as f:
            text = f.read()
        if re.search(r"^\s*default_ulimits\s*=", text, re.M):
            skip("podman cannot set this machine's limits, and its configuration names its own "
                 f"default_ulimits ({os.environ['CONTAINERS_CONF']}): {r.stderr.strip()[-300:]}")
        # Into the configuration's [containers] table, or a new one at its end (TOML has one
        # table of a name).
        if re.search(r"^\[containers\]\s*$", text, re.M):
            text = re.sub(r"^\[containers\]\s*$", "[containers]\n" + limits, text, count=1, flags=re.M)
        else:
            text += "\n[containers]\n" + limits + "\n"
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as out:
            out.write(text)
        os.environ["CONTAINERS_CONF"] = conf
        say(f"podman's containers get this process's limits (nofile {files}, nproc {processes}): "
            "it may not raise them")
        r = run(probe, check=False, timeout=120)
    if r.returncode != 0:
        skip("podman cannot start a container here: " + (r.stderr.strip().splitlines() or ["?"])[-1] +
             f" (podman's configuration: {os.environ.get('CONTAINERS_CONF', '/etc/containers/containers.conf')})")


# ---- the README's commands -------------------------------------------------------------------


def readme_blocks(readme, heading):
    """The ```sh blocks of the README's section whose heading starts with `heading`."""
    text = open(readme).read()
    m = re.search(r"^## " + re.escape(heading) + r".*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise RuntimeError(f"{readme}: no section '## {heading}'")
    return re.findall(r"```sh\n(.*?)```", m.group(1), re.S)


def make_pki(readme, work):
    """Runs the README's openssl block as it is; returns the folder it made (pki)."""
    blocks = readme_blocks(readme, "2. Certificates and token")
    pki_block = next(b for b in blocks if "openssl" in b)
    run(["bash", "-euo", "pipefail", "-c", pki_block], cwd=work)
    return os.path.join(work, "pki")


def readme_secrets(readme):
    """{secret name: {key: file}} from the README's `kubectl create secret generic` lines."""
    secrets = {}
    for block in readme_blocks(readme, "2. Certificates and token"):
        for line in block.splitlines():
            argv = shlex.split(line)
            if argv[:1] != ["kubectl"] or "secret" not in argv or "generic" not in argv:
                continue
            name = argv[argv.index("generic") + 1]
            files = {}
            for a in argv:
                if a.startswith("--from-file="):
                    spec = a[len("--from-file="):]
                    key, _, path = spec.partition("=") if "=" in spec else (os.path.basename(spec), "", spec)
                    files[key] = path
            secrets[name] = files
    return secrets


def secret_document(name, files, raw_data):
    """A Kubernetes Secret of these files, as `kubectl create secret generic` makes it; podman
    before 4.4 writes `data` to the files undecoded (podman#16625), so it gets the bytes."""
    data = {}
    for key, content in files.items():
        data[key] = content.decode() if raw_data else base64.b64encode(content).decode()
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", "data": data}


def podman_secret(name, document, work):
    path = os.path.join(work, f"secret-{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(document, f)
    run(["podman", "secret", "rm", name], check=False)
    run(["podman", "secret", "create", name, path])


# ---- rendering -------------------------------------------------------------------------------


def load_k8s(k8s_dir):
    docs = {}
    for f in sorted(os.listdir(k8s_dir)):
        if f.endswith(".yaml") and f != "kustomization.yaml":
            for d in yaml.safe_load_all(open(os.path.join(k8s_dir, f))):
                if d:
                    docs[(d["kind"], d["metadata"]["name"])] = d
    kustomization = yaml.safe_load(open(os.path.join(k8s_dir, "kustomization.yaml")))
    return docs, kustomization


def map_images(pod_spec, images):
    """kustomization.yaml's `images:`, pointed at the images built here."""
    for c in pod_spec.get("initContainers", []) + pod_spec["containers"]:
        if c["image"] not in images:
            raise RuntimeError(f"image {c['image']} is not in kustomization.yaml's images")
        c["image"] = images[c["image"]]


def downward_api(pod_spec, node_name, node_ip):
    """What the kubelet writes into the downward API's variables on that node."""
    values = {"status.hostIP": node_ip, "spec.nodeName": node_name}
    for c in pod_spec["containers"]:
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("fieldRef")
            if ref:
                if ref["fieldPath"] not in values:
                    raise RuntimeError(f"env {e['name']}: downward API field {ref['fieldPath']} not served here")
                e.pop("valueFrom")
                e["value"] = values[ref["fieldPath"]]


def host_network_ports(pod_spec):
    """A host-network pod's `ports` only declare the node's ports it takes (Kubernetes schedules
    by them); podman 4.3 makes them port mappings, which host networking refuses."""
    if pod_spec.get("hostNetwork"):
        for c in pod_spec["containers"]:
            c.pop("ports", None)


def optional_secrets(pod_spec):
    """An optional Secret that does not exist is an empty folder (Kubernetes); podman 4.3
    refuses the pod instead."""
    for v in pod_spec["volumes"]:
        ref = v.get("secret")
        if ref and ref.get("optional") and run(["podman", "secret", "inspect", ref["secretName"]],
                                                check=False).returncode != 0:
            v.pop("secret")
            v["emptyDir"] = {}


def volume_modes(pod_spec):
    """What the kubelet does to a Secret's or a ConfigMap's files and podman 4.3 does not: the
    volume's defaultMode (Kubernetes' default 0644), and the group fsGroup."""
    group = pod_spec.get("securityContext", {}).get("fsGroup")
    for v in pod_spec["volumes"]:
        source = v.get("secret") or v.get("configMap")
        if not source:
            continue
        name = source.get("secretName") or source.get("name")
        mount = run(["podman", "volume", "inspect", "-f", "{{.Mountpoint}}", name]).stdout.strip()
        for f in os.listdir(mount):
            path = os.path.join(mount, f)
            os.chmod(path, source.get("defaultMode", 0o644))
            if group is not None:
                os.chown(path, 0, group)


def expand_variables(pod_spec):
    """The kubelet's $(VAR) in command and args: the container's env value ($$ is a $; a name
    not in env stays as written); podman 4.3 passes them through."""
    for c in pod_spec["containers"]:
        env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}

        def expand(text):
            return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                          lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)

        for key in ("command", "args"):
            if key in c:
                c[key] = [expand(x) for x in c[key]]


def set_env(container, name, value):
    for e in container.get("env", []):
        if e["name"] == name:
            e["value"] = value
            return
    raise RuntimeError(f"container {container['name']} has no env {name} to set")


def set_flag(container, flag, value):
    args = container["args"]
    if flag not in args:
        raise RuntimeError(f"container {container['name']} has no {flag}")
    args[args.index(flag) + 1] = value


def pod(name, labels, spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(labels)}, "spec": spec}


def projected_as_secret(pod_spec, volume_name, secret_name, configmaps, secret_files, raw_data, work):
    """A projected volume (podman 4.3 has none) as one Secret of the same files and paths."""
    vol = next(v for v in pod_spec["volumes"] if v["name"] == volume_name)
    files = {}
    for source in vol["projected"]["sources"]:
        if "configMap" in source:
            data = configmaps[source["configMap"]["name"]]["data"]
            for item in source["configMap"]["items"]:
                files[item["path"]] = data[item["key"]].encode()
        elif "secret" in source:
            held = secret_files[source["secret"]["name"]]
            for item in source["secret"]["items"]:
                files[item["path"]] = held[item["key"]]
        else:
            raise RuntimeError(f"volume {volume_name}: a projected source podman cannot be given: {source}")
    podman_secret(secret_name, secret_document(secret_name, files, raw_data), work)
    mode = vol["projected"].get("defaultMode")
    vol.pop("projected")
    vol["secret"] = {"secretName": secret_name, "optional": False}
    if mode is not None:
        vol["secret"]["defaultMode"] = mode


# ---- the nodes' network ----------------------------------------------------------------------


class Nodes:
    """A network namespace holding the lab nodes' addresses, on a veth to this host."""

    def __init__(self):
        tag = str(os.getpid())
        self.ns = f"llk8s{tag}"
        self.host_if, self.ns_if = f"llk8s{tag}h"[:15], f"llk8s{tag}n"[:15]

    def __enter__(self):
        run(["ip", "netns", "add", self.ns])
        try:
            run(["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if])
            run(["ip", "link", "set", self.ns_if, "netns", self.ns])
            run(["ip", "addr", "add", f"{HOST_ADDRESS}/24", "dev", self.host_if])
            run(["ip", "link", "set", self.host_if, "up"])
            run(["ip", "-n", self.ns, "link", "set", "lo", "up"])
            for _, ip in NODES:
                run(["ip", "-n", self.ns, "addr", "add", f"{ip}/24", "dev", self.ns_if])
            run(["ip", "-n", self.ns, "link", "set", self.ns_if, "up"])
            run(["ip", "-n", self.ns, "route", "add", "default", "via", HOST_ADDRESS])
            # The nightly pod reaches the nodes through this host, as a pod network does.
            with open("/proc/sys/net/ipv4/ip_forward") as f:
                self.forward = f.read().strip()
            with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
                f.write("1")
        except Exception:
            self.__exit__()
            raise
        return self

    def enter(self, argv):
        """argv in the nodes' network: nsenter, not `ip netns exec`, which remounts /sys and
        hides the cgroup hierarchies podman needs."""
        return ["nsenter", f"--net=/run/netns/{self.ns}"] + argv

    def __exit__(self, *exc):
        run(["ip", "netns", "del", self.ns], check=False)  # takes the veth with it
        run(["ip", "link", "del", self.host_if], check=False)
        if getattr(self, "forward", None) is not None:
            with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
                f.write(self.forward)


# ---- the run ---------------------------------------------------------------------------------


def wait_for_log(container, needle, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = run(["podman", "logs", container], check=False)
        text = r.stdout + r.stderr
        if needle in text:
            return text
        state = run(["podman", "inspect", "-f", "{{.State.Status}}", container], check=False).stdout.strip()
        if state in ("exited", "stopped"):
            return text
        time.sleep(0.3)
    return run(["podman", "logs", container], check=False).stderr


def scenario_repo(work):
    """A scenario repository with one scenario for the lab as lab.json has it: the target on
    lab-node-1 (role target), the load on lab-node-2 (role load)."""
    src = os.path.join(work, "scenarios-src")
    os.makedirs(os.path.join(src, "scenarios"))
    scenario = {
        "name": "k8s-night",
        "targets": [{"name": "hello", "builtin": "hello", "server_threads": 1}],
        "matrix": {"delay_ms": [0, 5]},
        "load": {"threads": 1, "connections": 4, "duration_s": 1, "warmup_s": 0.2},
        # Both nodes are this one machine, so each agent sees the other's work on its CPUs
        # (busy-machine): measured once, not again after waits of 30 and 60 s.
        "execution": {"remeasure_disturbed": 0},
    }
    with open(os.path.join(src, "scenarios", "k8s-night.json"), "w") as f:
        json.dump(scenario, f, indent=2)
    git = ["git", "-c", "user.name=loadlab", "-c", "user.email=loadlab@localhost"]
    run(git + ["init", "-q", "-b", "main", src])
    run(git + ["-C", src, "add", "."])
    run(git + ["-C", src, "commit", "-q", "-m", "a night"])
    return src


# podman 4.3 keeps a named volume per Secret and ConfigMap a pod mounts, and reuses one that
# exists: removed before and after, so that a run never reads an earlier run's files.
MADE_VOLUMES = ["loadlab-catalog", "loadlab-lab", "loadlab-agent-tls", "loadlab-token", "loadlab-controller-tls",
                "loadlab-nightly-lab", NIGHTLY_VOLUME]


def remove_volumes():
    for v in MADE_VOLUMES:
        run(["podman", "volume", "rm", "-f", v], check=False)


def profiling_image(a, src, version):
    """The agent image with perf (deploy/k8s/README.md, "Security context", step 1)."""
    image = f"localhost/loadlab-agent:{version}-perf"
    if a.keep_images and run(["podman", "image", "exists", image], check=False).returncode == 0:
        return image
    t = time.monotonic()
    run(["bash", os.path.join(src, "deploy", "containers", "build-images.sh")], cwd=src, timeout=1800,
        env=dict(os.environ, BUILD_DIR=os.path.abspath(a.build_dir), AGENT_EXTRA_PACKAGES="linux-perf",
                 TAG=f"{version}-perf"))
    run(["podman", "rmi", f"localhost/loadlab-controller:{version}-perf"], check=False)  # made beside it
    say(f"the agent image with linux-perf built in {time.monotonic() - t:.0f} s")
    return image


def play_profiling(a, src, version, work, nodes, template, image_map, catalog, lab_dir, loadlab):
    """The README's way to profile on the nodes, played on lab-node-1: the image with perf, the
    runtime's default seccomp profile with perf_event_open allowed (tools/seccomp-with-perf.py), the
    pod's seccompProfile Localhost. A profiled run then has the target's profile from lab-node-1
    (user space: the agent holds no capability) and says why lab-node-2's load has none."""
    seccomp_dir = os.path.join(work, "seccomp")
    os.makedirs(seccomp_dir)
    default = "/usr/share/containers/seccomp.json"  # podman's default profile (containers-common)
    made = run([sys.executable, os.path.join(src, "deploy", "k8s", "tools", "seccomp-with-perf.py"), default])
    with open(os.path.join(seccomp_dir, "loadlab-agent-perf.json"), "w") as f:
        f.write(made.stdout)
    node, ip = NODES[0]
    spec = copy.deepcopy(template["spec"])
    map_images(spec, dict(image_map, **{"loadlab-agent": profiling_image(a, src, version)}))
    spec["securityContext"]["seccompProfile"] = {"type": "Localhost", "localhostProfile": "loadlab-agent-perf.json"}
    downward_api(spec, node, ip)
    expand_variables(spec)
    set_flag(spec["containers"][0], "--allow-load-to", NODE_NET)
    host_network_ports(spec)
    name = f"loadlab-agent-{node}"
    perf_pod = pod(name, template["metadata"]["labels"], spec)
    # podman 4.3 reads a Localhost profile from the annotation of before Kubernetes 1.19, not from
    # seccompProfile: given as the kubelet would give the field.
    perf_pod["metadata"]["annotations"] = {"seccomp.security.alpha.kubernetes.io/pod": "localhost/loadlab-agent-perf.json"}
    perf_yaml = os.path.join(work, "perf-agent.yaml")
    with open(perf_yaml, "w") as f:
        yaml.safe_dump_all([catalog, perf_pod], f)
    run(["podman", "pod", "rm", "-f", name])
    run(nodes.enter(["podman", "kube", "play", "--start=false", "--seccomp-profile-root", seccomp_dir, perf_yaml]))
    run(nodes.enter(["podman", "pod", "start", name]))
    log = wait_for_log(f"{name}-agent", "listening on", 30)
    if "profiling with perf (user space only)" not in log:
        fail(f"the agent with perf on {node} did not say 'profiling with perf (user space only)': {log.strip()[-800:]}")
    scenario = os.path.join(lab_dir, "profiled.json")
    with open(scenario, "w") as f:
        json.dump({"name": "k8s-profile", "targets": [{"name": "hello", "builtin": "hello", "server_threads": 1}],
                   "matrix": {"delay_ms": [0]},
                   "load": {"threads": 1, "connections": 4, "duration_s": 3, "warmup_s": 0.2},
                   "profile": {"call_graph": "auto"}, "execution": {"remeasure_disturbed": 0}}, f)
    out = os.path.join(lab_dir, "profiled")
    r = run(nodes.enter([loadlab, "run", scenario, "--lab", os.path.join(lab_dir, "lab.json"), "--out", out]),
            check=False, timeout=300)
    if r.returncode != 0:
        return fail(f"the profiled run exited {r.returncode}: {(r.stdout + r.stderr).strip()[-1500:]}")
    try:
        with open(os.path.join(out, "result.json")) as f:
            rep = json.load(f)["cells"][0]["repetitions"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        return fail(f"the profiled run left no repetition in {out}/result.json: {e!r}")
    server, client = rep.get("server", {}).get("profile", {}), rep.get("client", {}).get("profile", {})
    say(f"profiled through the pods: the server's profile {server.get('samples', 0)} samples of its user "
        f"space (kernel {server.get('kernel', False)}), {server.get('call_graph_probe')}; "
        f"{server.get('rooted_pct', 0):.0f} % of its stacks whole; the load's: {client.get('unavailable') or 'present'}")
    # User space only: loadlab-target spends most of its CPU in the kernel's TCP, so tens of samples.
    if server.get("unavailable") or int(server.get("samples", 0)) < 20 or server.get("kernel"):
        fail(f"lab-node-1's profile of the target: {json.dumps(server)[:800]}")
    else:
        path, text = os.path.join(out, server.get("file", "")), ""
        if os.path.isfile(path):
            with open(path) as f:
                text = f.read()
        if "loadlab::target::" not in text:
            fail(f"lab-node-1's profile names none of loadlab-target's functions: {path}")
    if "perf" not in client.get("unavailable", ""):
        fail(f"lab-node-2 (no perf in its image) did not say why it has no profile: {json.dumps(client)[:800]}")


def main():
    global verbose
    p = argparse.ArgumentParser()
    p.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--build-dir", required=True)
    p.add_argument("--keep-images", action="store_true", help="use the images already built for this version")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    verbose = a.verbose
    src = os.path.abspath(a.source_dir)
    # The project's own podman configuration (runc, cgroupfs), not the machine's /etc.
    os.environ.setdefault("CONTAINERS_CONF", os.path.join(src, "deploy", "containers", "containers.conf"))
    k8s = os.path.join(src, "deploy", "k8s")
    readme = os.path.join(k8s, "README.md")
    base = "localhost/loadlab-base:bookworm"
    started = time.monotonic()

    preflight(base)
    raw_data = podman_version() < (4, 4)
    remove_volumes()
    work = tempfile.mkdtemp(prefix="loadlab-k8s-play-")
    os.chmod(work, 0o755)
    played, secrets_made = [], []
    try:
        check_podman_runs(work)
        # The images, from this build's .debs.
        version_line = run([os.path.join(a.build_dir, "bin", "loadlab"), "--version"]).stdout
        version = re.search(r"(\d+\.\d+\.\d+)", version_line).group(1)
        images = {"loadlab-agent": f"localhost/loadlab-agent:{version}",
                  "loadlab-controller": f"localhost/loadlab-controller:{version}"}
        have = all(run(["podman", "image", "exists", i], check=False).returncode == 0 for i in images.values())
        if not (a.keep_images and have):
            t = time.monotonic()
            run(["bash", os.path.join(src, "deploy", "containers", "build-images.sh")], cwd=src, timeout=1800,
                env=dict(os.environ, BUILD_DIR=os.path.abspath(a.build_dir)))
            say(f"images built from the .debs in {time.monotonic() - t:.0f} s")

        docs, kustomization = load_k8s(k8s)
        image_map = {i["name"]: images[i["name"]] for i in kustomization["images"]}
        configmaps = {n: d for (k, n), d in docs.items() if k == "ConfigMap"}
        daemonset = docs[("DaemonSet", "loadlab-agent")]
        cronjob = docs[("CronJob", "loadlab-nightly")]
        pvc = docs[("PersistentVolumeClaim", NIGHTLY_VOLUME)]

        with Nodes() as nodes:
            # Certificates, token and Secrets, by the README's commands.
            pki = make_pki(readme, work)
            secret_files = {}
            for name, files in readme_secrets(readme).items():
                held = {key: open(os.path.join(pki, path), "rb").read() for key, path in files.items()}
                secret_files[name] = held
                podman_secret(name, secret_document(name, held, raw_data), work)
                secrets_made.append(name)
            for needed in ("loadlab-agent-tls", "loadlab-controller-tls", "loadlab-token"):
                if needed not in secret_files:
                    raise RuntimeError(f"{readme}: no `kubectl create secret generic {needed}` command")

            # lab.json, edited as the README says: the nodes' addresses.
            lab_cm = copy.deepcopy(configmaps["loadlab-lab"])
            lab = json.loads(lab_cm["data"]["lab.json"])
            addresses = dict(NODES)
            for agent in lab["agents"]:
                if agent["name"] not in addresses:
                    raise RuntimeError(f"lab.json names {agent['name']}, not a node of this test")
                agent["address"] = f"{addresses[agent['name']]}:7700"
            lab_cm["data"]["lab.json"] = json.dumps(lab, indent=2)
            configmaps = dict(configmaps, **{"loadlab-lab": lab_cm})

            # The agents: the DaemonSet's pod template on each node.
            template = daemonset["spec"]["template"]
            agent_yaml = os.path.join(work, "agents.yaml")
            pods = []
            for node, ip in NODES:
                spec = copy.deepcopy(template["spec"])
                map_images(spec, image_map)
                downward_api(spec, node, ip)
                expand_variables(spec)
                set_flag(spec["containers"][0], "--allow-load-to", NODE_NET)
                host_network_ports(spec)
                pods.append(pod(f"loadlab-agent-{node}", template["metadata"]["labels"], spec))
            with open(agent_yaml, "w") as f:
                yaml.safe_dump_all([configmaps["loadlab-catalog"]] + pods, f)
            t = time.monotonic()
            run(nodes.enter(["podman", "kube", "play", "--start=false", agent_yaml]))
            played.append(agent_yaml)
            volume_modes(pods[0]["spec"])
            for p_ in pods:
                # Started in the nodes' network: a host-network container joins the network
                # of the podman that starts it.
                run(nodes.enter(["podman", "pod", "start", p_["metadata"]["name"]]))
            for node, ip in NODES:
                log = wait_for_log(f"loadlab-agent-{node}-agent", "listening on", 30)
                if f"listening on {ip}:7700" not in log:
                    fail(f"agent pod on {node} did not say 'listening on {ip}:7700': {log.strip()[-800:]}")
            say(f"agent pods listening in {time.monotonic() - t:.1f} s")

            # `loadlab agents` over mutual TLS with the token, from the nodes' network; and
            # refused without the token.
            lab_dir = os.path.join(work, "lab")
            os.makedirs(lab_dir)
            for key, content in list(secret_files["loadlab-controller-tls"].items()) + \
                    list(secret_files["loadlab-token"].items()):
                with open(os.path.join(lab_dir, key), "wb") as f:
                    f.write(content)
            with open(os.path.join(lab_dir, "lab.json"), "w") as f:
                f.write(lab_cm["data"]["lab.json"])
            loadlab = os.path.join(os.path.abspath(a.build_dir), "bin", "loadlab")
            r = run(nodes.enter([loadlab, "agents", "--lab", os.path.join(lab_dir, "lab.json")]), check=False)
            say(r.stdout.rstrip())
            if r.returncode != 0:
                fail(f"loadlab agents exit {r.returncode}: {r.stdout}{r.stderr}")
            for node, _ in NODES:
                line = next((l for l in r.stdout.splitlines() if l.startswith(node)), "")
                if not line or "UNREACHABLE" in line:
                    fail(f"loadlab agents: {node} not described: {line or r.stdout}")
                elif "no profiling: " not in line:  # off in the manifests as written
                    fail(f"loadlab agents: {node} does not say why it cannot profile: {line}")
            tokenless = dict(lab)
            tokenless.pop("token_file")
            with open(os.path.join(lab_dir, "tokenless.json"), "w") as f:
                json.dump(tokenless, f)
            r = run(nodes.enter([loadlab, "agents", "--lab", os.path.join(lab_dir, "tokenless.json")]), check=False)
            if r.returncode == 0 or "UNREACHABLE" not in r.stdout:
                fail(f"loadlab agents without the token was not refused: exit {r.returncode}: {r.stdout}")

            # The nightly: the CronJob's pod template, its volume and its repository.
            spec = copy.deepcopy(cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"])
            map_images(spec, image_map)
            container = spec["containers"][0]
            repo_in_pod = f"{NIGHTLY_STATE}/scenarios.git"
            set_env(container, "LOADLAB_SCENARIO_REPO", f"file://{repo_in_pod}")
            expand_variables(spec)
            projected_as_secret(spec, "lab", "loadlab-nightly-lab", configmaps, secret_files, raw_data, work)
            optional_secrets(spec)
            secrets_made.append("loadlab-nightly-lab")
            pvc_yaml = os.path.join(work, "pvc.yaml")
            with open(pvc_yaml, "w") as f:
                yaml.safe_dump(pvc, f)
            run(["podman", "kube", "play", pvc_yaml])
            mount = run(["podman", "volume", "inspect", "-f", "{{.Mountpoint}}", NIGHTLY_VOLUME]).stdout.strip()
            run(["git", "clone", "-q", "--bare", scenario_repo(work), os.path.join(mount, "scenarios.git")])
            # fsGroup: the kubelet gives the volume to the pod's group; podman 4.3 does not.
            run(["chown", "-R", f"{UID}:{UID}", mount])
            nightly_yaml = os.path.join(work, "nightly.yaml")
            nightly = pod("loadlab-nightly", cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"],
                          spec)
            with open(nightly_yaml, "w") as f:
                yaml.safe_dump_all([lab_cm, nightly], f)
            t = time.monotonic()
            run(["podman", "kube", "play", "--start=false", nightly_yaml])
            played.append(nightly_yaml)
            volume_modes(spec)
            run(["podman", "pod", "start", "loadlab-nightly"])
            code = run(["podman", "wait", "loadlab-nightly-nightly"], timeout=300).stdout.strip()
            logs = run(["podman", "logs", "loadlab-nightly-nightly"], check=False)
            say(f"nightly pod exited {code} after {time.monotonic() - t:.1f} s")
            if verbose:
                say((logs.stdout + logs.stderr).rstrip())
            if code != "0":
                fail(f"the nightly pod exited {code}: {(logs.stdout + logs.stderr).strip()[-2000:]}")
            runs = os.path.join(mount, "runs")
            latest = os.path.join(runs, "latest")
            result = os.path.join(latest, "k8s-night", "result.json")
            if not os.path.exists(result):
                found = [os.path.join(d, f) for d, _, fs in os.walk(runs) for f in fs] if os.path.isdir(runs) else []
                fail(f"no run folder with result.json on the volume ({latest}); the volume has {found[:20]}")
            else:
                cells = json.load(open(result)).get("cells", [])
                if len(cells) != 2:
                    fail(f"{result}: {len(cells)} cells, expected 2")
                for c in cells:
                    m = c.get("median") or {}
                    key = c.get("cell", {}).get("key")
                    if c.get("error") or not m.get("requests"):
                        fail(f"{result}: cell {key} not measured: {c.get('error')}")
                        continue
                    # The 5 ms cell's rate through the pods: 4 connections of 5 ms requests.
                    if key == "hello/d5" and not 0.8 * 800 <= m.get("qps", 0) <= 1.02 * 800:
                        fail(f"{result}: cell {key} measured {m.get('qps')} req/s, 4 connections of 5 ms give ~800")
                    where = (m.get("target_agent"), [p.get("agent") for p in m.get("load_parts", [])])
                    if where != ("lab-node-1", ["lab-node-2"]):
                        fail(f"{result}: cell {key} ran on {where}, expected the target on lab-node-1 and the load on lab-node-2")
                say(f"run folder on the volume: {os.path.relpath(os.path.realpath(latest), mount)} "
                    f"({len(cells)} cells), history.db {'present' if os.path.exists(os.path.join(mount, 'history.db')) else 'MISSING'}")
                if not os.path.exists(os.path.join(mount, "history.db")):
                    fail("no history.db on the volume")

            # Profiles: off in the manifests as written, then on lab-node-1 as the README says.
            t = time.monotonic()
            play_profiling(a, src, version, work, nodes, template, image_map, configmaps["loadlab-catalog"], lab_dir,
                           loadlab)
            played.append(os.path.join(work, "perf-agent.yaml"))
            say(f"profiling played in {time.monotonic() - t:.0f} s")
    except RuntimeError as e:
        fail(str(e))
    finally:
        for f in reversed(played):
            run(["podman", "kube", "down", f], check=False)
        for name in ("loadlab-agent-lab-node-1", "loadlab-agent-lab-node-2", "loadlab-nightly"):
            run(["podman", "pod", "rm", "-f", name], check=False)
        for name in secrets_made:
            run(["podman", "secret", "rm", name], check=False)
        remove_volumes()
        shutil.rmtree(work, ignore_errors=True)

    say(f"{'FAILED' if errors else 'passed'} in {time.monotonic() - started:.0f} s")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
