#!/usr/bin/env python3
"""Checks that deploy/k8s, deploy/Containerfile and the packages agree with each other and
with the binaries (registered in tests/deploy/CMakeLists.txt as deploy_k8s_manifests).

  k8s_manifests_test.py --agent PATH/loadlab-agent --controller PATH/loadlab [--source-dir DIR]

Every manifest is parsed; labels, selectors, Secret and ConfigMap names and keys, mount paths,
ports and flags are cross-checked; the catalog is loaded by the real agent and lab.json by the
real controller. Each mismatch is one line naming the file and what disagrees; exit status 1
if there is any, 77 (ctest's SKIP_RETURN_CODE) without PyYAML.
"""
import argparse
import ipaddress
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is missing (apt-get install python3-yaml)")
    sys.exit(77)

# The nightly job's interface (docs/nightly.md, issue 13): the only LOADLAB_* variables the
# script reads; LOADLAB_SCENARIO_REPO is required.
NIGHTLY_ENV = {"LOADLAB_SCENARIO_REPO", "LOADLAB_SCENARIO_REF", "LOADLAB_SCENARIO_DIR", "LOADLAB_LAB",
               "LOADLAB_STATE_DIR", "LOADLAB_NIGHTLY_FLAGS"}
# Flags whose value is a file the agent reads: it must lie in a mounted volume that holds it.
AGENT_FILE_FLAGS = ["--catalog", "--tls-cert", "--tls-key", "--tls-client-ca", "--token-file"]
# lab.json's keys (docs/security.md and controller/lab/lab.cpp).
LAB_KEYS = {"agents", "tls", "token_file"}
LAB_TLS_KEYS = {"ca", "cert", "key", "server_name"}
LAB_AGENT_KEYS = {"name", "address", "roles", "labels", "tls", "token_file"}
# Catalog entry keys documented in docs/agent.md besides those examples/catalog.json uses.
CATALOG_TARGET_DOC_KEYS = {"argv", "env", "cwd", "readiness", "start_timeout_ms", "protocols"}
CATALOG_CLIENT_DOC_KEYS = {"tool", "path"}
# What the image's builder installs besides the Makefile's BUILD_PACKAGES (what the programs are
# built from, less ccache: a one-off build): cpack's dpkg-shlibdeps needs dpkg-dev and file.
NOT_BUILD_DEPS = {"ccache"}
PACKAGING_DEPS = ["dpkg-dev", "file"]

errors = []


def fail(where, message):
    if f"{where}: {message}" in errors:  # one cause met by several checks is said once
        return
    errors.append(f"{where}: {message}")
    print(f"FAIL {where}: {message}")


def check(condition, where, message):
    if not condition:
        fail(where, message)
    return condition


# ---- the manifests ------------------------------------------------------------------------


def load_manifests(k8s_dir):
    """{file: [documents]} of every YAML file under deploy/k8s, relative names."""
    docs = {}
    for root, _, files in os.walk(k8s_dir):
        for f in sorted(files):
            if not f.endswith((".yaml", ".yml")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, k8s_dir)
            try:
                with open(path) as fh:
                    docs[rel] = [d for d in yaml.safe_load_all(fh) if d is not None]
            except yaml.YAMLError as e:
                fail(rel, f"not valid YAML: {e}")
    return docs


def pod_spec(doc):
    kind = doc.get("kind")
    if kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
        return doc["spec"]["template"]["spec"]
    if kind == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if kind == "Pod":
        return doc["spec"]
    return None


def readme_secrets(readme_text):
    """{secret name: set of keys} from the README's `kubectl create secret generic` lines."""
    secrets = {}
    text = readme_text.replace("\\\n", " ")
    for line in text.splitlines():
        m = re.search(r"kubectl\b.*\bcreate secret generic\s+(\S+)(.*)", line)
        if not m:
            continue
        keys = set()
        for kind, value in re.findall(r"--from-(file|literal)=(\S+)", m.group(2)):
            if kind == "literal" or "=" in value:
                keys.add(value.split("=", 1)[0])
            else:
                keys.add(os.path.basename(value))
        secrets.setdefault(m.group(1), set()).update(keys)
    return secrets


def volume_sources(volume):
    """[(kind, name, keys or None for every key, optional)] a volume takes its files from."""
    out = []

    def items(src):
        return {i["path"]: i["key"] for i in src["items"]} if "items" in src else None

    if "secret" in volume:
        s = volume["secret"]
        out.append(("Secret", s["secretName"], items(s), s.get("optional", False)))
    if "configMap" in volume:
        c = volume["configMap"]
        out.append(("ConfigMap", c["name"], items(c), c.get("optional", False)))
    for src in volume.get("projected", {}).get("sources", []):
        for kind, key in (("Secret", "secret"), ("ConfigMap", "configMap")):
            if key in src:
                out.append((kind, src[key]["name"], items(src[key]), src[key].get("optional", False)))
    return out


class Objects:
    """The ConfigMaps and Secrets the manifests define and the README creates."""

    def __init__(self, docs, readme_text):
        self.keys = {}  # (kind, name) -> set of keys
        for docs_of_file in docs.values():
            for d in docs_of_file:
                if d.get("kind") in ("ConfigMap", "Secret"):
                    data = dict(d.get("data") or {}) | dict(d.get("stringData") or {})
                    self.keys[(d["kind"], d["metadata"]["name"])] = set(data)
        for name, keys in readme_secrets(readme_text).items():
            self.keys.setdefault(("Secret", name), set()).update(keys)

    def files_of(self, where, volume):
        """{file name in the mount: (kind, object name, key)}; reports unknown objects and keys."""
        files = {}
        for kind, name, items, optional in volume_sources(volume):
            known = self.keys.get((kind, name))
            if not check(known is not None, where,
                         f"volume {volume['name']} takes {kind} {name}, which no manifest defines"
                         + (" and deploy/k8s/README.md creates with no `kubectl create secret generic "
                            f"{name}` line" if kind == "Secret" else "")):
                continue
            if items is None:
                for k in known:
                    files[k] = (kind, name, k)
            else:
                for path, key in items.items():
                    check(key in known, where, f"volume {volume['name']}: {kind} {name} has no key {key} "
                          f"(it has {sorted(known)})")
                    files[path] = (kind, name, key)
        return files


def mounted_file(where, container, volumes_by_name, objects, path):
    """Checks that `path` is a file that a volume mounted in `container` holds; its volume."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path.startswith(mp + "/") and (best is None or len(mp) > len(best["mountPath"].rstrip("/"))):
            best = m
    if not check(best is not None, where, f"{path} is in no volume mounted in container {container['name']} "
                 f"(mounts: {[m['mountPath'] for m in container.get('volumeMounts', [])]})"):
        return None
    volume = volumes_by_name.get(best["name"])
    if not check(volume is not None, where, f"mount {best['mountPath']} names no volume {best['name']}"):
        return None
    if "emptyDir" in volume or "persistentVolumeClaim" in volume:
        return volume
    files = objects.files_of(where, volume)
    rel = path[len(best["mountPath"].rstrip("/")) + 1:]
    check(rel in files, where, f"{path}: volume {volume['name']} mounted at {best['mountPath']} has no file "
          f"{rel} (it has {sorted(files)})")
    return volume


def flag_values(args):
    """{--flag: [values]} of a container's args (--flag VALUE..., or --flag=VALUE)."""
    values, current = {}, None
    for a in args:
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            current = name
            values.setdefault(name, [])
            if eq:
                values[name].append(value)
        elif current:
            values[current].append(a)
    return values


def help_flags(binary, subcommand=None):
    cmd = [binary] + ([subcommand] if subcommand else []) + ["--help"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        fail(binary, f"{' '.join(cmd)} exited with {out.returncode}: {out.stderr.strip()}")
    return set(re.findall(r"--[a-z0-9][a-z0-9-]*", out.stdout))


# ---- the install rules (deploy/CMakeLists.txt) -------------------------------------------


def cmake_calls(text, command):
    """The argument text of every `command(...)` call, parentheses and quotes balanced."""
    calls = []
    for m in re.finditer(r"(?m)^\s*" + command + r"\s*\(", text):
        i, depth, quoted = m.end(), 1, False
        while depth:
            c = text[i]
            if c == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and c == "(":
                depth += 1
            elif not quoted and c == ")":
                depth -= 1
            i += 1
        calls.append(text[m.end():i - 1])
    return calls


def installed_files(src):
    """{absolute installed path: (component, source file or None)} for prefix /usr."""
    deploy = os.path.join(src, "deploy")
    text = open(os.path.join(deploy, "CMakeLists.txt")).read()
    text = re.sub(r"(?m)#.*$", "", text)
    project = re.search(r"project\((\w+)", open(os.path.join(src, "CMakeLists.txt")).read()).group(1)
    variables = {"CMAKE_INSTALL_BINDIR": "bin", "CMAKE_INSTALL_DATADIR": "share",
                 "CMAKE_INSTALL_DOCDIR": f"share/doc/{project}", "PROJECT_SOURCE_DIR": src,
                 "CMAKE_CURRENT_SOURCE_DIR": deploy}
    subst = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), m.group(0)), s)
    out = {}
    for call in cmake_calls(text, "install"):
        words = [subst(w) for w in call.split()]
        if not words or words[0] not in ("TARGETS", "FILES", "PROGRAMS", "DIRECTORY"):
            continue
        kw = {"DESTINATION", "COMPONENT", "RENAME", "RUNTIME", "USE_SOURCE_PERMISSIONS"}
        sources = []
        for w in words[1:]:
            if w in kw:
                break
            sources.append(w)
        dest = words[words.index("DESTINATION") + 1]
        dest = dest if dest.startswith("/") else "/usr/" + dest
        component = words[words.index("COMPONENT") + 1] if "COMPONENT" in words else "Unspecified"
        rename = words[words.index("RENAME") + 1] if "RENAME" in words else None
        for s in sources:
            s = s if os.path.isabs(s) or words[0] == "TARGETS" else os.path.join(deploy, s)
            if words[0] == "TARGETS":
                out[f"{dest}/{s}"] = (component, None)
            elif words[0] == "DIRECTORY":
                base = os.path.basename(s.rstrip("/"))
                for root, _, files in os.walk(s):
                    for f in files:
                        rel = os.path.relpath(os.path.join(root, f), s)
                        out[os.path.normpath(f"{dest}/{base}/{rel}")] = (component, os.path.join(root, f))
            else:
                out[f"{dest}/{rename or os.path.basename(s)}"] = (component, s)
    packages = dict((c.lower(), n) for c, n in re.findall(r"CPACK_DEBIAN_(\w+)_PACKAGE_NAME\s+(\S+)\)", text))
    return out, packages


def package_of(where, path, installs, packages):
    """The package installing `path`, or None (reported)."""
    if path in installs:
        return packages.get(installs[path][0])
    fail(where, f"runs {path}, which no install rule of deploy/CMakeLists.txt installs")
    return None


# ---- the checks ---------------------------------------------------------------------------


def check_kustomization(docs, k8s_dir):
    k = docs.get("kustomization.yaml", [None])[0]
    if not check(k is not None, "kustomization.yaml", "missing"):
        return
    check(k.get("namespace") == "loadlab", "kustomization.yaml", f"namespace is {k.get('namespace')}, not loadlab")
    listed = set(k.get("resources", []))
    top = {f for f in docs if "/" not in f and f != "kustomization.yaml"}
    for f in sorted(top - listed):
        fail("kustomization.yaml", f"resources does not list {f}")
    for f in sorted(listed - top):
        fail("kustomization.yaml", f"resources lists {f}, which is not a manifest in deploy/k8s")
    namespaces = [d["metadata"]["name"] for f in docs for d in docs[f] if d.get("kind") == "Namespace"]
    check(namespaces == ["loadlab"], "namespace", f"the manifests define the namespaces {namespaces}, not [loadlab]")
    return {i["name"] for i in k.get("images", [])}


def check_daemonset(ds, where, readme_text):
    spec = ds["spec"]
    pod = spec["template"]["spec"]
    template_labels = spec["template"]["metadata"].get("labels", {})
    for key, value in spec["selector"].get("matchLabels", {}).items():
        check(template_labels.get(key) == value, where,
              f"selector {key}={value} does not match the pod template's labels {template_labels}")
    check(pod.get("hostNetwork") is True, where, "hostNetwork is not true (targets must be at node addresses)")
    check(pod.get("dnsPolicy") == "ClusterFirstWithHostNet", where,
          f"dnsPolicy is {pod.get('dnsPolicy')}, not ClusterFirstWithHostNet (host network)")
    strategy = spec.get("updateStrategy", {})
    check(strategy.get("type") == "RollingUpdate" and strategy.get("rollingUpdate", {}).get("maxUnavailable") == 1,
          where, f"updateStrategy is {strategy}, not RollingUpdate with maxUnavailable 1")
    node_selector = pod.get("nodeSelector", {})
    check(len(node_selector) == 1, where, f"nodeSelector should be the one lab label, is {node_selector}")
    for key, value in node_selector.items():
        check(re.search(rf"kubectl label nodes? .*{re.escape(key)}={re.escape(str(value))}", readme_text), where,
              f"nodeSelector {key}={value}: deploy/k8s/README.md has no `kubectl label node ... {key}={value}` line")
        for t in pod.get("tolerations", []):
            check(t.get("key") == key and t.get("value") == value, where,
                  f"toleration {t} is not for the nodeSelector's label {key}={value}")
    return node_selector


def check_agent_container(where, pod, c, objects, agent_flags, allowed_images):
    args = c.get("args", [])
    env = {e["name"]: e for e in c.get("env", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for ref in re.findall(r"\$\((\w+)\)", " ".join(args)):
        check(ref in env, where, f"args use $({ref}), which container {c['name']} has no env for")
    flags = flag_values(args)
    for f in flags:
        check(f in agent_flags, where, f"loadlab-agent has no flag {f} (its --help lists {sorted(agent_flags)})")
    for f in AGENT_FILE_FLAGS:
        if check(len(flags.get(f, [])) == 1, where, f"args should give {f} one file, give {flags.get(f)}"):
            mounted_file(where, c, volumes, objects, flags[f][0])
    listen = (flags.get("--listen") or [""])[0]
    m = re.fullmatch(r"(.+):(\d+)", listen)
    if not check(m, where, f"--listen {listen!r} is not HOST:PORT"):
        return None
    port = int(m.group(2))
    check(m.group(1) == "$(NODE_IP)" and env.get("NODE_IP", {}).get("valueFrom", {}).get("fieldRef", {})
          .get("fieldPath") == "status.hostIP", where, "--listen is not $(NODE_IP) from the downward API status.hostIP")
    check(flags.get("--advertise") == ["$(NODE_IP)"], where, f"--advertise is {flags.get('--advertise')}, "
          "not the node address $(NODE_IP)")
    ports = [p["containerPort"] for p in c.get("ports", [])]
    check(ports == [port], where, f"containerPort {ports} is not --listen's port {port}")
    for probe in ("readinessProbe", "livenessProbe"):
        p = c.get(probe)
        if check(p is not None, where, f"no {probe}"):
            check("grpc" not in p and "httpGet" not in p, where,
                  f"{probe}: the agent requires mutual TLS; kubelet's gRPC or HTTP probe would be refused")
            check(p.get("tcpSocket", {}).get("port") in (port, "grpc"), where,
                  f"{probe} does not connect to --listen's port {port}: {p}")
    check(c.get("image") in allowed_images, where, f"image {c.get('image')} is not one of kustomization's images")
    cidrs = []
    for value in flags.get("--allow-load-to", []):
        try:
            cidrs.append(ipaddress.ip_network(value))
        except ValueError as e:
            fail(where, f"--allow-load-to {value}: {e}")
    return {"port": port, "cidrs": cidrs, "name": flags.get("--name"), "catalog": flags["--catalog"][0]}


def check_security(where, pod, c, uid):
    sc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == uid, where,
          f"pod securityContext should run as non-root {uid} (the image's loadlab user), is {sc}")
    check(sc.get("fsGroup") == uid, where, f"fsGroup {sc.get('fsGroup')} is not the loadlab group {uid}")
    check(csc.get("allowPrivilegeEscalation") is False, where, "allowPrivilegeEscalation is not false")
    if csc.get("readOnlyRootFilesystem"):
        check(any(m["mountPath"] == "/tmp" for m in c.get("volumeMounts", [])), where,
              "a read-only root file system needs a /tmp volume")


def check_lab(where, lab_text, agent, lab_dir_files, controller):
    try:
        lab = json.loads(lab_text)
    except json.JSONDecodeError as e:
        fail(where, f"lab.json is not JSON: {e}")
        return
    check(set(lab) <= LAB_KEYS, where, f"lab.json keys {sorted(set(lab) - LAB_KEYS)} are not in docs/security.md")
    named = []
    for scope, obj in [("lab.json", lab)] + [(f"lab.json agent {a.get('name')}", a) for a in lab.get("agents", [])]:
        if "tls" in obj:
            check(set(obj["tls"]) <= LAB_TLS_KEYS, where, f"{scope}: tls keys {sorted(set(obj['tls']) - LAB_TLS_KEYS)} "
                  "are not in docs/security.md")
            named += [obj["tls"][k] for k in ("ca", "cert", "key") if k in obj["tls"]]
        if "token_file" in obj:
            named.append(obj["token_file"])
    for f in named:
        check(not os.path.isabs(f) and f in lab_dir_files, where,
              f"lab.json names {f}, which is not a file beside lab.json in its mounted volume "
              f"(there: {sorted(lab_dir_files)})")
    check(lab.get("agents"), where, "lab.json lists no agents")
    for a in lab.get("agents", []):
        check(set(a) <= LAB_AGENT_KEYS, where, f"agent {a.get('name')}: keys {sorted(set(a) - LAB_AGENT_KEYS)} unknown")
        m = re.fullmatch(r"(.+):(\d+)", a.get("address", ""))
        if not check(m, where, f"agent {a.get('name')}: address {a.get('address')} is not HOST:PORT"):
            continue
        check(int(m.group(2)) == agent["port"], where, f"agent {a['name']}: port {m.group(2)} is not the "
              f"DaemonSet's --listen/containerPort {agent['port']}")
        try:
            ip = ipaddress.ip_address(m.group(1))
            check(any(ip in n for n in agent["cidrs"]), where, f"agent {a['name']}: node address {ip} is outside "
                  f"the agents' --allow-load-to {[str(n) for n in agent['cidrs']]}: load could not reach its targets")
        except ValueError:
            pass
    # The real controller reads it: the files it names are made (placeholders; it only reads
    # them here), its agents cannot be reached, so exit 4 with each agent UNREACHABLE. A lab
    # file it refuses is exit 2.
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "lab.json"), "w") as fh:
            fh.write(lab_text)
        for f in lab_dir_files:
            if f != "lab.json":
                os.makedirs(os.path.dirname(os.path.join(tmp, f)), exist_ok=True)
                with open(os.path.join(tmp, f), "w") as fh:
                    fh.write("placeholder-token\n" if "token" in f else "-----BEGIN PLACEHOLDER-----\n")
        out = subprocess.run([controller, "agents", "--lab", os.path.join(tmp, "lab.json")], capture_output=True,
                             text=True, timeout=120)
        if check(out.returncode in (0, 4), where, f"`loadlab agents --lab lab.json` refused the lab file "
                 f"(exit {out.returncode}): {out.stderr.strip()[-2000:]}"):
            for a in lab.get("agents", []):
                check(re.search(rf"(?m)^{re.escape(a['name'])}\s", out.stdout), where,
                      f"`loadlab agents` does not list agent {a['name']}: {out.stdout}")


def run_agent_with_catalog(where, agent_bin, catalog_path):
    """Starts the real agent on loopback with the catalog; it must get to `listening on`."""
    p = subprocess.Popen([agent_bin, "--listen", "127.0.0.1:0", "--catalog", catalog_path], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    seen, deadline = "", time.time() + 30
    try:
        while time.time() < deadline and "listening on" not in seen:
            ready, _, _ = select.select([p.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(p.stdout.fileno(), 65536)  # unbuffered: select sees what is left
                if not chunk:
                    break
                seen += chunk.decode(errors="replace")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    check("listening on" in seen, where, f"loadlab-agent --catalog refused the catalog (exit "
          f"{p.returncode}): {seen.strip()[-2000:]}")


def check_catalog(where, catalog_text, src, installs, packages, agent_bin):
    try:
        catalog = json.loads(catalog_text)
    except json.JSONDecodeError as e:
        fail(where, f"catalog.json is not JSON: {e}")
        return
    example = json.load(open(os.path.join(src, "examples", "catalog.json")))
    check(set(catalog) <= set(example), where, f"catalog keys {sorted(set(catalog) - set(example))} are not "
          f"examples/catalog.json's {sorted(example)}")
    target_keys = CATALOG_TARGET_DOC_KEYS | {k for t in example["targets"].values() for k in t}
    client_keys = CATALOG_CLIENT_DOC_KEYS | {k for c in example.get("clients", {}).values() for k in c}
    local = json.loads(catalog_text)
    for name, t in catalog.get("targets", {}).items():
        check(set(t) <= target_keys, where, f"target {name}: keys {sorted(set(t) - target_keys)} unknown")
        argv0 = (t.get("argv") or [""])[0]
        if not check(argv0.startswith("/"), where, f"target {name}: argv[0] {argv0} is relative, but a "
                     "ConfigMap's folder holds no programs"):
            continue
        if argv0.startswith("/usr/"):  # the image's: installed by the agent's package
            package = package_of(where, argv0, installs, packages)
            check(package in (None, packages.get("agent")), where, f"target {name}: {argv0} is in package {package}, "
                  "not the one the agent image installs")
        source = installs.get(argv0, (None, None))[1]
        if source:
            local["targets"][name]["argv"][0] = source  # its source file: the agent checks argv[0] exists
    for name, c in catalog.get("clients", {}).items():
        check(set(c) <= client_keys, where, f"client {name}: keys {sorted(set(c) - client_keys)} unknown")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "catalog.json")
        with open(path, "w") as fh:
            json.dump(local, fh)
        run_agent_with_catalog(where, agent_bin, path)


def check_cronjob(where, cj, objects, pvcs, node_selector, allowed_images, controller_flags):
    check(cj["spec"].get("concurrencyPolicy") == "Forbid", where,
          f"concurrencyPolicy is {cj['spec'].get('concurrencyPolicy')}, not Forbid")
    pod = pod_spec(cj)
    c = pod["containers"][0]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    for name in sorted(n for n in env if n.startswith("LOADLAB_")):
        check(name in NIGHTLY_ENV, where, f"env {name} is not one of loadlab-nightly's {sorted(NIGHTLY_ENV)}")
    check(env.get("LOADLAB_SCENARIO_REPO"), where, "env LOADLAB_SCENARIO_REPO (required) is not set")
    for flag in shlex.split(env.get("LOADLAB_NIGHTLY_FLAGS") or ""):
        if flag.startswith("--"):
            check(flag.split("=")[0] in controller_flags, where, f"LOADLAB_NIGHTLY_FLAGS: `loadlab run` has no {flag}")
    check(c.get("image") in allowed_images, where, f"image {c.get('image')} is not one of kustomization's images")
    for v in volumes.values():
        if "persistentVolumeClaim" in v:
            claim = v["persistentVolumeClaim"]["claimName"]
            check(claim in pvcs, where, f"volume {v['name']} claims {claim}, but the PVCs are {sorted(pvcs)}")
    state = env.get("LOADLAB_STATE_DIR") or "/var/lib/loadlab/nightly"
    state_mount = [m for m in c.get("volumeMounts", []) if (state + "/").startswith(m["mountPath"].rstrip("/") + "/")]
    check(state_mount and "persistentVolumeClaim" in volumes.get(state_mount[-1]["name"], {}), where,
          f"LOADLAB_STATE_DIR {state} is not on a PersistentVolumeClaim's mount")
    lab_path = env.get("LOADLAB_LAB") or "/etc/loadlab/lab.json"
    lab_volume = mounted_file(where, c, volumes, objects, lab_path)
    # The git credentials: the files ssh is given, and those the credential helper reads ($d/NAME).
    git_files = re.findall(r"(?:-i|UserKnownHostsFile=)\s*(/\S+)", env.get("GIT_SSH_COMMAND") or "")
    helper = env.get("GIT_CONFIG_VALUE_0") or ""
    d = re.search(r"\bd=(/\S+?);", helper)
    git_files += [f"{d.group(1)}/{n}" for n in re.findall(r"\$d/([\w.-]+)", helper)] if d else []
    for path in sorted(set(git_files)):
        mounted_file(where, c, volumes, objects, path)
    for term in pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution",
                                                                     {}).get("nodeSelectorTerms", []):
        for e in term.get("matchExpressions", []):
            check(e["key"] in node_selector, where, f"affinity on {e['key']}, not the lab label {list(node_selector)}")
    lab_dir_files = {}
    if lab_volume:
        mount = [m for m in c["volumeMounts"] if m["name"] == lab_volume["name"]][0]["mountPath"].rstrip("/")
        lab_dir = os.path.dirname(lab_path)
        lab_dir_files = {os.path.relpath(os.path.join(mount, f), lab_dir): src
                         for f, src in objects.files_of(where, lab_volume).items()}
    return c, lab_path, lab_dir_files


def containerfile_stages(text):
    """{stage: {"from": image, "body": text}} of a Containerfile, its lines joined."""
    text = re.sub(r"(?m)^\s*#.*\n", "", text).replace("\\\n", " ")
    stages, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
        if m:
            current = m.group(2) or f"stage{len(stages)}"
            stages[current] = {"from": m.group(1), "body": ""}
        elif current:
            stages[current]["body"] += line + "\n"
    return stages


def check_containerfile(src, installs, packages, uid_of_manifests, commands_by_image):
    where = "deploy/Containerfile"
    stages = containerfile_stages(open(os.path.join(src, "deploy", "Containerfile")).read())
    for name, image in (("builder", "debian:12"), ("agent", "debian:12-slim"), ("controller", "debian:12-slim")):
        if check(name in stages, where, f"no stage {name} (stages: {list(stages)})"):
            check(stages[name]["from"] == image, where, f"stage {name} is FROM {stages[name]['from']}, not {image}")
    if "builder" not in stages:
        return
    builder = stages["builder"]["body"]
    make = open(os.path.join(src, "Makefile")).read().replace("\\\n", " ")
    build_packages = re.search(r"(?m)^BUILD_PACKAGES\s*:=\s*(.*)$", make).group(1).split()
    apt = " ".join(re.findall(r"apt-get install ([^&]*)", builder)).split()
    for p in build_packages + PACKAGING_DEPS:
        if p not in NOT_BUILD_DEPS:
            check(p in apt, where, f"the builder does not install {p} (Makefile BUILD_PACKAGES)")
    check(re.search(r"cpack -G DEB", builder), where, "the builder does not run `cpack -G DEB`")
    check(re.search(r"cmake --build", builder), where, "the builder does not build (cmake --build)")
    wanted = {"agent": {packages["agent"]}, "controller": {packages["controller"], packages["agent"]}}
    for stage, debs in wanted.items():
        if stage not in stages:
            continue
        body = stages[stage]["body"]
        installed = set(re.findall(r"/([\w.+-]+)_\*\.deb", " ".join(re.findall(r"apt-get install ([^&]*)", body))))
        check(installed == debs, where, f"stage {stage} installs the packages {sorted(installed)}, not {sorted(debs)} "
              "(deploy/CMakeLists.txt's CPACK_DEBIAN_*_PACKAGE_NAME)")
        m = re.search(r"(?m)^\s*USER\s+(\d+)", body)
        check(m and int(m.group(1)) == uid_of_manifests, where, f"stage {stage}: USER is not the numeric "
              f"{uid_of_manifests} the manifests run as (runAsNonRoot needs a numeric USER)")
        check(re.search(rf"useradd .*--uid {uid_of_manifests}\b.* loadlab\b", body), where,
              f"stage {stage} does not make the loadlab user with uid {uid_of_manifests} before the package does")
        entry = re.search(r'(?m)^\s*ENTRYPOINT\s+\["([^"]+)"', body)
        runs = set(commands_by_image.get(stage, set())) | ({entry.group(1)} if entry else set())
        for path in sorted(runs):
            pkg = package_of(f"{where} stage {stage}", path, installs, packages)
            check(pkg is None or pkg in installed, where, f"stage {stage} runs {path} from package {pkg}, which it does "
                  f"not install ({sorted(installed)})")
    if "controller" in stages:
        tools = " ".join(re.findall(r"apt-get install ([^&]*)", stages["controller"]["body"])).split()
        for p in ("git", "ca-certificates"):
            check(p in tools, where, f"stage controller does not install {p} (the nightly job clones the scenarios)")
    # The images made of .debs already built (deploy/containers/build-images.sh): the same stages
    # but for where their .debs come from.
    debs_file = os.path.join("deploy", "containers", "Containerfile.debs")
    other = containerfile_stages(open(os.path.join(src, debs_file)).read())
    def same(body):
        return " ".join(re.sub(r"(?m)^\s*COPY\s.*$", "", body).split())
    for name in ("agent", "controller"):
        if check(name in other and name in stages, debs_file, f"no stage {name} (stages: {list(other)})"):
            check(other[name]["from"] == "${BASE}", debs_file, f"stage {name} is FROM {other[name]['from']}, not ${{BASE}}")
            check(same(other[name]["body"]) == same(stages[name]["body"]), debs_file,
                  f"stage {name} differs from deploy/Containerfile's beyond its COPY of the .debs")
    for f in (".containerignore", ".dockerignore"):
        path = os.path.join(src, f)
        if check(os.path.exists(path), f, "missing: the build trees would be sent as the build context"):
            check(re.search(r"(?m)^/?build\*?/?$", open(path).read()), f, "does not exclude build*")


def check_seccomp_tool(src, readme_text):
    """tools/seccomp-with-perf.py (the README's way to let an agent container profile): a default
    profile with perf_event_open allowed whatever the capabilities, every other rule as it was."""
    where = "deploy/k8s/tools/seccomp-with-perf.py"
    tool = os.path.join(src, where)
    check("tools/seccomp-with-perf.py DEFAULT.json" in readme_text, "deploy/k8s/README.md",
          "does not give the command that makes the profiling seccomp profile")
    conditional = {"names": ["perf_event_open", "bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}}
    denied = {"names": ["perf_event_open", "bpf"], "action": "SCMP_ACT_ERRNO", "excludes": {"caps": ["CAP_SYS_ADMIN"]}}
    default = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"}, conditional, denied,
        {"name": "perf_event_open", "action": "SCMP_ACT_ERRNO"}]}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "default.json")
        with open(path, "w") as f:
            json.dump(default, f)
        r = subprocess.run([sys.executable, tool, path], capture_output=True, text=True, timeout=30)
        if not check(r.returncode == 0, where, f"exit {r.returncode}: {r.stderr.strip()}"):
            return
        rules = json.loads(r.stdout)["syscalls"]
        naming = [x for x in rules if "perf_event_open" in x.get("names", [x.get("name")])]
        check(naming == [{"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW"}], where,
              f"perf_event_open should be in one unconditional allow rule, not {naming}")
        others = [x for x in rules if x not in naming]
        check(others == [default["syscalls"][0], dict(conditional, names=["bpf"]), dict(denied, names=["bpf"])], where,
              f"the other rules changed: {others}")
        with open(path, "w") as f:
            json.dump({"syscalls": "no"}, f)
        r = subprocess.run([sys.executable, tool, path], capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and "not a seccomp profile" in r.stderr, where,
              f"a file that is not a profile: exit {r.returncode}, {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", required=True, help="the loadlab-agent binary")
    ap.add_argument("--controller", required=True, help="the loadlab binary")
    ap.add_argument("--source-dir", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    args = ap.parse_args()
    src = args.source_dir
    k8s = os.path.join(src, "deploy", "k8s")
    readme_path = os.path.join(k8s, "README.md")
    readme = open(readme_path).read() if os.path.exists(readme_path) else ""
    check(readme, "deploy/k8s/README.md", "missing")

    docs = load_manifests(k8s)
    for f, ds in docs.items():
        if f == "kustomization.yaml":
            continue
        for d in ds:
            check(d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name"), f,
                  "a document without apiVersion, kind or metadata.name")
    images = check_kustomization(docs, k8s) or set()
    by_kind = {}
    for f, ds in docs.items():
        for d in ds:
            by_kind.setdefault(d.get("kind"), []).append((f, d))
    objects = Objects(docs, readme)
    installs, packages = installed_files(src)
    check({"agent", "controller"} <= set(packages), "deploy/CMakeLists.txt",
          f"no package names for the components agent and controller: {packages}")
    agent_flags = help_flags(args.agent)
    run_flags = help_flags(args.controller, "run")

    daemonsets = by_kind.get("DaemonSet", [])
    cronjobs = by_kind.get("CronJob", [])
    check(len(daemonsets) == 1, "deploy/k8s", f"{len(daemonsets)} DaemonSets, not 1 (the agents)")
    check(len(cronjobs) == 1, "deploy/k8s", f"{len(cronjobs)} CronJobs, not 1 (the nightly controller)")
    if not daemonsets or not cronjobs:
        return report()
    where, ds = daemonsets[0]
    node_selector = check_daemonset(ds, where, readme)
    pod = pod_spec(ds)
    agent_c = pod["containers"][0]
    uid = pod.get("securityContext", {}).get("runAsUser")
    agent = check_agent_container(where, pod, agent_c, objects, agent_flags, images)
    check_security(where, pod, agent_c, uid)

    cj_where, cj = cronjobs[0]
    pvcs = {d["metadata"]["name"] for _, d in by_kind.get("PersistentVolumeClaim", [])}
    nightly_c, lab_path, lab_dir_files = check_cronjob(cj_where, cj, objects, pvcs, node_selector, images, run_flags)
    check_security(cj_where, pod_spec(cj), nightly_c, uid)

    # Every other pod (e.g. tools/) claims a PVC that exists.
    for f, d in by_kind.get("Pod", []):
        for v in d["spec"].get("volumes", []):
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"]["claimName"]
                check(claim in pvcs, f, f"claims {claim}, but the PVCs are {sorted(pvcs)}")

    configmaps = {d["metadata"]["name"]: (f, d) for f, d in by_kind.get("ConfigMap", [])}
    if agent:
        catalog_source = None
        for m in agent_c.get("volumeMounts", []):
            if agent["catalog"].startswith(m["mountPath"].rstrip("/") + "/"):
                vol = {v["name"]: v for v in pod["volumes"]}[m["name"]]
                rel = agent["catalog"][len(m["mountPath"].rstrip("/")) + 1:]
                catalog_source = objects.files_of(where, vol).get(rel)
        if check(catalog_source and catalog_source[0] == "ConfigMap", where, "--catalog is not a ConfigMap's file"):
            f, cm = configmaps[catalog_source[1]]
            check_catalog(f, cm["data"][catalog_source[2]], src, installs, packages, args.agent)
        lab_source = lab_dir_files.get(os.path.basename(lab_path))
        if check(lab_source and lab_source[0] == "ConfigMap", cj_where, f"{lab_path} is not a ConfigMap's file"):
            f, cm = configmaps[lab_source[1]]
            check_lab(f, cm["data"][lab_source[2]], agent, lab_dir_files, args.controller)

    commands = {"agent": set(agent_c.get("command", [])[:1]), "controller": set(nightly_c.get("command", [])[:1])}
    check(agent_c.get("image") == "loadlab-agent" and nightly_c.get("image") == "loadlab-controller", "deploy/k8s",
          "the images should be loadlab-agent (Containerfile target agent) and loadlab-controller (target controller)")
    check_containerfile(src, installs, packages, uid, commands)
    check_seccomp_tool(src, readme)
    return report()


def report():
    if errors:
        print(f"\n{len(errors)} mismatch(es) in deploy/k8s, deploy/Containerfile and the packages")
        return 1
    print("deploy/k8s, deploy/Containerfile and the packages agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
