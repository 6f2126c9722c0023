"""execute_bash attack table: every row is refused, or runs contained, under every sandbox backend here.

Contained means: no file written anywhere outside the sandbox's private tmp (the whole test tree is
snapshotted), no secret from outside the root, from a denied file, from a hard link or from the server's
environment in the result, no denied *name* in the output of a command that ran (DESIGN.md §3: not even as a
name; `exec.mounts` says how each backend hides them), nothing a malicious `.git/config` asked for executed, and no process of the call
left alive (found by the call's environment tag in /proc). The repository's `.git/config` is poisoned for
the whole table, so every git row also proves the hardening. Rows marked `os_layer` depend on the OS sandbox
(symlink-following programs, python3 escapes); the others must also hold with `exec.sandbox = "none"`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from exec_support import (
    HOST_ENV_SECRET,
    PWNED,
    SECRETS,
    build_repo,
    leaked_names,
    os_backends,
    poison_git_config,
    tagged_processes,
    tree_snapshot,
)
from repo_sandbox.calls import CallContext
from repo_sandbox.exec.sandbox import Backend
from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RAN = "ran"
"""The command ran (exit code irrelevant) and was contained."""


@dataclass(frozen=True, slots=True)
class Attack:
    command: str
    expect: str
    cwd: str = "."
    timeout: float | None = None
    os_layer: bool = False
    truncated: bool = False


def A(command: str, expect: str, **kwargs: Any) -> Attack:  # a table row reads better short
    return Attack(command, expect, **kwargs)


PARSE = "command_parse_error"
NOT_ALLOWED = "command_not_allowed"
ARG = "argument_not_allowed"
OUTSIDE = "path_outside_root"
DENIED = "path_denied"
SPECIAL = "special_file"
TIMEOUT = "timeout"

ATTACKS: list[Attack] = [
    # -- shell composition: nothing reaches a shell; each element of a list is judged on its own ----------
    A("ls; touch MARKER", NOT_ALLOWED),
    A("ls && touch MARKER", NOT_ALLOWED),
    A("ls || touch MARKER", NOT_ALLOWED),
    A("false && touch MARKER", NOT_ALLOWED),
    A("false || touch MARKER", NOT_ALLOWED),
    A("ls && rm x", NOT_ALLOWED),
    A("true; curl http://127.0.0.1/", NOT_ALLOWED),
    A("ls 2>/dev/null; cat ../outside/secret.txt", OUTSIDE),
    A("cat .env 2>/dev/null || echo x", DENIED),
    A("ls & touch MARKER", PARSE),
    A("ls &", PARSE),
    A("ls; ls &", PARSE),
    A("ls\ntouch MARKER", PARSE),
    A("ls ;", RAN, os_layer=True),
    A("ls ; ; ls", PARSE),
    A("ls && (touch MARKER)", PARSE),
    A("true && { touch MARKER; }", PARSE),
    A("sleep 100; ls", TIMEOUT, timeout=1),
    A("true && yes", RAN, truncated=True),
    # -- cd in a list: jailed like cwd, judged before anything runs -----------------------------------
    A("cd .. && cat outside/secret.txt", OUTSIDE),
    A("cd ../.. && ls", OUTSIDE, cwd="src"),
    A("cd .. && cd .. && ls", OUTSIDE, cwd="src"),
    A("cd src && cd ../.. && ls", OUTSIDE),
    A("cd src && cat ../../outside/secret.txt", OUTSIDE),
    A("cd link_out && ls", OUTSIDE),
    A("cd link_out && cat secret.txt", OUTSIDE),
    A("cd cmp/x/escape && ls", OUTSIDE),
    A("cd cmp/x && ls -la escape/", OUTSIDE),
    A("false && cd link_out; ls", OUTSIDE),
    A("cd nosuch; cat link_secret", OUTSIDE),
    A("cd /etc && cat passwd", OUTSIDE),
    A("cd src; cat ../.env", DENIED),
    A("cd config && cat secrets.yaml", DENIED),
    A("cd cfg && cat secrets.yaml", DENIED),
    A("cd .git && ls", DENIED),
    A("cd .git/.. && ls", RAN, os_layer=True),  # lexically the root, as bash's cd -L sees it
    A("cd .git/hooks && ls", DENIED),
    A("cd s* && ls", NOT_ALLOWED),
    A('cd "$HOME" && ls', NOT_ALLOWED),
    A("cd ~ && ls", NOT_ALLOWED),
    A("cd - && ls", NOT_ALLOWED),
    A("cd && ls", NOT_ALLOWED),
    A("cd src | ls", PARSE),
    A("cd src 2>MARKER && ls", NOT_ALLOWED),
    A("cd src && ls -la ..", RAN, os_layer=True),
    A("cd cfg && ls -la", RAN, os_layer=True),
    A("cd nosuch; ls", RAN, os_layer=True),
    A("(touch MARKER)", PARSE),
    A("{ touch MARKER; }", PARSE),
    A("! ls", PARSE),
    A("if true; then ls; fi", PARSE),
    A("for f in a; do cat $f; done", PARSE),
    A("while true; do ls; done", PARSE),
    A("f() { ls; }", PARSE),
    A("ls # hidden comment", PARSE),
    A("cat 'unterminated", PARSE),
    A("[[ -f README.md ]]", PARSE),
    # -- expansions, substitutions, redirections, assignments ----------------------------------------
    A("echo $(id)", NOT_ALLOWED),
    A("echo `id`", NOT_ALLOWED),
    A('echo "$(cat ../outside/secret.txt)"', NOT_ALLOWED),
    A('echo "`id`"', NOT_ALLOWED),
    A("echo $HOME", NOT_ALLOWED),
    A("echo ${PATH}", NOT_ALLOWED),
    A('echo "$AWS_SECRET_ACCESS_KEY"', NOT_ALLOWED),
    A("echo $((1+2))", NOT_ALLOWED),
    A("cat <(id)", NOT_ALLOWED),
    A("diff <(ls) README.md", NOT_ALLOWED),
    A("A=b ls", NOT_ALLOWED),
    A("PATH=/tmp ls", NOT_ALLOWED),
    A("LD_PRELOAD=/tmp/x.so ls", NOT_ALLOWED),
    A("export A=1", NOT_ALLOWED),
    A("ls > MARKER", NOT_ALLOWED),
    A("ls >> MARKER", NOT_ALLOWED),
    A("echo x > MARKER", NOT_ALLOWED),
    A("echo x > f", NOT_ALLOWED),
    A("ls 2>/tmp/x", NOT_ALLOWED),
    A("ls 2>MARKER", NOT_ALLOWED),
    A("ls >/dev/null/../../tmp/x", NOT_ALLOWED),
    A("ls >/dev/null/../../MARKER", NOT_ALLOWED),
    A("ls > /dev/nul?", NOT_ALLOWED),
    A("ls 2>&1 >MARKER", NOT_ALLOWED),
    A("ls >&MARKER", NOT_ALLOWED),
    A("ls &>MARKER", NOT_ALLOWED),
    A("ls &>>MARKER", NOT_ALLOWED),
    A("ls 3>&1", NOT_ALLOWED),
    A("ls 3>MARKER", NOT_ALLOWED),
    A("ls 0>/dev/null", NOT_ALLOWED),
    A("ls {fd}>MARKER", NOT_ALLOWED),
    A("ls >/dev/null -la", NOT_ALLOWED),
    A("ls >$HOME", NOT_ALLOWED),
    A("ls && cat <<EOF\nx\nEOF", NOT_ALLOWED),
    A("cat .env >/dev/null", DENIED),
    A("ls 2>&1", RAN, os_layer=True),
    A("ls nosuch 2>&1 | cat", RAN),
    A("ls |& cat", RAN, os_layer=True),
    A("ls >/dev/null 2>&1 && echo ok", RAN),
    A("grep -rn KEY . 2>/dev/null | head", RAN, os_layer=True),
    A("cat < README.md", NOT_ALLOWED),
    A("cat <<EOF\nx\nEOF", NOT_ALLOWED),
    A("cat <<< x", NOT_ALLOWED),
    A("cat ~/.ssh/id_rsa", NOT_ALLOWED),
    A("ls ~", NOT_ALLOWED),
    A("ls {README.md,../outside}", NOT_ALLOWED),
    A("echo {1..3}", NOT_ALLOWED),
    A('echo $"x"', NOT_ALLOWED),
    # -- programs that are not allowed, by name or by path ---------------------------------------------
    A("sh -c id", NOT_ALLOWED),
    A("bash -c id", NOT_ALLOWED),
    A("/bin/sh -c id", NOT_ALLOWED),
    A("./run.sh", NOT_ALLOWED),
    A("env ls", NOT_ALLOWED),
    A("xargs cat", NOT_ALLOWED),
    A("ls | xargs cat", NOT_ALLOWED),
    A("eval ls", NOT_ALLOWED),
    A("exec ls", NOT_ALLOWED),
    A("less README.md", NOT_ALLOWED),
    A("tar -cf x.tar README.md", NOT_ALLOWED),
    A("egrep TODO README.md", NOT_ALLOWED),
    A("mawk 'BEGIN{system(\"id\")}'", NOT_ALLOWED),
    A("perl -e 'print 1'", NOT_ALLOWED),
    A("curl http://127.0.0.1/", NOT_ALLOWED),
    A("rm -rf src", NOT_ALLOWED),
    A("touch MARKER", NOT_ALLOWED),
    A("tee MARKER", NOT_ALLOWED),
    A("cp README.md MARKER", NOT_ALLOWED),
    A("kill -9 1", NOT_ALLOWED),
    A("timeout 1 ls", NOT_ALLOWED),
    # -- path jail on operands and cwd -----------------------------------------------------------------
    A("cat /etc/shadow", OUTSIDE),
    A("cat ../outside/secret.txt", OUTSIDE),
    A("cat src/../../outside/secret.txt", OUTSIDE),
    A("cat ../repo-evil/secret.txt", OUTSIDE),
    A("cat link_secret", OUTSIDE),
    A("cat link_out/secret.txt", OUTSIDE),
    A("cat .env", DENIED),
    A("cat ./.ENV", DENIED),
    A("cat config/secrets.yaml", DENIED),
    A("cat .git/config", DENIED),
    A("cat hard.txt", SPECIAL),
    A("cat pipe.fifo", SPECIAL),
    A("head -n 5 /proc/self/environ", OUTSIDE),
    A("cat env_link", DENIED),
    A("cat cfg/secrets.yaml", DENIED),
    A("cat env_hardlink", SPECIAL),
    A("cat server.pem.", DENIED),  # trailing dots and spaces, NFKC forms: the same name as a denied one
    A("cat '.git ./config'", DENIED),
    A("cat 'config/secrets.yaml '", DENIED),
    A("cat config./secrets.yaml", DENIED),
    A("cat x.\uff2b\uff25\uff39", DENIED),
    A("cat \uff0eenv", DENIED),
    A("cat sub/.docker/config.json", DENIED),
    A("cat /proc/self/cwd/.env", OUTSIDE),
    A("ls /proc/self/root", OUTSIDE),
    A("cat ../repo/.env", OUTSIDE),
    A("diff -r cfg config", RAN, os_layer=True),
    A("grep -r token cfg/", RAN, os_layer=True),
    A("grep -r API_KEY env_link", DENIED),
    A("git show HEAD:cfg/secrets.yaml", DENIED),
    A("ls", OUTSIDE, cwd="../outside"),
    A("ls", OUTSIDE, cwd="link_out"),
    A("ls", DENIED, cwd=".git"),
    A("ls /", OUTSIDE),
    A("cat /etc/*", OUTSIDE),
    A("cat .git/*", DENIED),
    A("wc -l *", RAN),
    A("sort *", RAN),
    A("cat *.txt", RAN),
    # -- names of denied entries never show, whatever lists a directory (os_layer: the sandbox hides them) --
    A("ls -la", RAN, os_layer=True),
    A("ls -R", RAN, os_layer=True),
    A("ls -laR", RAN, os_layer=True),
    A("ls -a config", RAN, os_layer=True),
    A("ls -la cfg/", RAN, os_layer=True),
    A("ls -la ..", RAN, cwd="src", os_layer=True),
    A("ls -d *", RAN),
    A("ls -d .*", RAN),
    A("ls -d .e*", RAN),
    A("echo * .* .e* */*", RAN),
    A("find .", RAN, os_layer=True),
    A("find . -name '.env*'", RAN, os_layer=True),
    A("find . -name '*.yaml'", RAN, os_layer=True),
    A("find cfg/ -type f", RAN, os_layer=True),
    A("grep -rl x .", RAN, os_layer=True),
    A("grep -rc KEY", RAN, os_layer=True),
    A("du -a", RAN, os_layer=True),
    A("du -a cfg/", RAN, os_layer=True),
    A("tree -a", RAN, os_layer=True),
    A("tree -a cfg", RAN, os_layer=True),
    A("diff -rq . cmp", RAN, os_layer=True),
    A("stat .env", DENIED),
    A("stat env_link", DENIED),
    A("stat config/secrets.yaml", DENIED),
    A("ls -la .env", DENIED),
    A("find .git", DENIED),
    A("git ls-files -o", RAN),
    A("git status --ignored", RAN),
    A("git status --porcelain --ignored", RAN),
    A("git log --stat", RAN),
    A("git log --name-only --all", RAN),
    A("git show --stat HEAD~1", RAN),
    A("git grep -l KEY", RAN),
    A("git diff --stat HEAD~1", RAN),
    # -- the read-only programs added with lists -----------------------------------------------------
    A("sha256sum -c list.txt", ARG),
    A("md5sum --check list.txt", ARG),
    A("sha1sum --che list.txt", ARG),
    A("sha512sum ../outside/secret.txt", OUTSIDE),
    A("sha256sum hard.txt", SPECIAL),
    A("base64 ../outside/secret.txt", OUTSIDE),
    A("base64 .env", DENIED),
    A("base64 -d pipe.fifo", SPECIAL),
    A("base64 README.md MARKER", ARG),
    A("xxd README.md MARKER", ARG),
    A("xxd -r README.md MARKER", ARG),
    A("xxd -ps ../outside/secret.txt", OUTSIDE),
    A("xxd -s 0 .env", DENIED),
    A("xxd -c16 .env", ARG),
    A("od -c ../outside/secret.txt", OUTSIDE),
    A("od --traditional README.md 0", ARG),
    A("hexdump -f list.txt README.md", ARG),
    A("hexdump -C link_secret", OUTSIDE),
    A("comm README.md ../outside/secret.txt", OUTSIDE),
    A("paste .env", DENIED),
    A("join README.md notes.md MARKER", ARG),
    A("date -s 2020-01-01", ARG),
    A("date 0101000020", ARG),
    A("date -f list.txt", ARG),
    A("date -r ../outside/secret.txt", OUTSIDE),
    A("which /bin/sh", ARG),
    A("which sh", RAN),
    A("printenv", RAN),
    A("test -f ../outside/secret.txt", OUTSIDE),
    A("test -e link_out/secret.txt", OUTSIDE),
    A("test README.md -nt ../outside/secret.txt", OUTSIDE),
    A("[ -f .env ]", DENIED),
    A("[ -s config/secrets.yaml ] && echo yes", DENIED),
    A("expr 1 + 1", RAN),
    A("seq 1 100000000", RAN, truncated=True),
    # -- head, tail, wc, cat ---------------------------------------------------------------------------
    A("cat --show-al README.md", ARG),
    A("tail -f README.md", ARG),
    A("tail -qf README.md", ARG),
    A("tail --follow README.md", ARG),
    A("tail --foll README.md", ARG),
    A("tail -F README.md", ARG),
    A("tail --pid=1 README.md", ARG),
    A("wc --files0-from=list.txt", ARG),
    A("wc --files0=list.txt", ARG),
    A("head -n 3 ../outside/secret.txt", OUTSIDE),
    # -- ls, du, tree, stat, file, realpath ------------------------------------------------------------
    A("ls -L link_out", ARG),
    A("ls -lRL .", ARG),
    A("ls --dereference", ARG),
    A("ls --deref", ARG),
    A("ls -la link_out/", OUTSIDE),
    A("du -L .", ARG),
    A("du --deref .", ARG),
    A("du --files0-from=list.txt", ARG),
    A("du -X list.txt .", ARG),
    A("tree -o MARKER", ARG),
    A("tree -R", ARG),
    A("tree --fromfile list.txt", ARG),
    A("tree -l", ARG),
    A("stat /etc/shadow", OUTSIDE),
    A("file -f list.txt", ARG),
    A("file -m list.txt README.md", ARG),
    A("file -z README.md", ARG),
    A("file -C", ARG),
    A("realpath ../outside", OUTSIDE),
    A("realpath link_out", OUTSIDE),
    A("realpath --relative-to=/etc README.md", OUTSIDE),
    # -- find ------------------------------------------------------------------------------------------
    A("find . -exec touch MARKER \\;", ARG),
    A("find . -execdir id \\;", ARG),
    A("find . -ok id \\;", ARG),
    A("find . -okdir id \\;", ARG),
    A("find . -delete", ARG),
    A("find . -fprint MARKER", ARG),
    A("find . -fprintf MARKER %p", ARG),
    A("find . -fls MARKER", ARG),
    A("find . -files0-from list.txt", ARG),
    A("find -L .", ARG),
    A("find -H .", ARG),
    A("find . -follow", ARG),
    A("find / -name shadow", OUTSIDE),
    A("find .. -name secret.txt", OUTSIDE),
    A("find . -newer ../outside/secret.txt", OUTSIDE),
    A("find . -name '*.txt'", RAN),
    # -- grep, rg --------------------------------------------------------------------------------------
    A("grep -f /etc/passwd README.md", ARG),
    A("grep -f ../outside/secret.txt -r .", ARG),
    A("grep -R SECRET .", ARG),
    A("grep -rR SECRET .", ARG),
    A("grep --dereference-recursive SECRET .", ARG),
    A("grep --deref SECRET .", ARG),
    A("grep --fil=list.txt README.md", ARG),
    A("grep -P '(a+)+$' README.md", ARG),
    A("grep --exclude-from=list.txt -r x .", ARG),
    A("grep -d recurse SECRET .", ARG),
    A("grep -D read x pipe.fifo", ARG),
    A("grep -r SECRET ..", OUTSIDE),
    A("grep -r SECRET link_out", OUTSIDE),
    A("grep -r SECRET .", RAN, os_layer=True),
    A("grep -rn KEY", RAN, os_layer=True),
    A("rg --pre cat x", ARG),
    A("rg --pre=touch x", ARG),
    A("rg --pr=touch x", ARG),
    A("rg --pre-glob '*' x", ARG),
    A("rg --hostname-bin=/usr/bin/id x", ARG),
    A("rg -z x", ARG),
    A("rg -L x", ARG),
    A("rg -f list.txt", ARG),
    A("rg --ignore-file /etc/passwd x", ARG),
    A("rg -P x", ARG),
    A("rg --engine pcre2 x", ARG),
    # -- sed (forced --sandbox) ------------------------------------------------------------------------
    A("sed -n '1e touch MARKER' README.md", RAN),
    A("sed 's/TODO/id/e' README.md", RAN),
    A("sed 'w MARKER' README.md", RAN),
    A("sed 's/a/b/w MARKER' README.md", RAN),
    A("sed 'r /etc/shadow' README.md", RAN),
    A("sed 'R ../outside/secret.txt' README.md", RAN),
    A("sed -e 'W MARKER' README.md", RAN),
    A("sed -i s/a/b/ README.md", ARG),
    A("sed -ni s/a/b/ README.md", ARG),
    A("sed --in-place s/a/b/ README.md", ARG),
    A("sed --in-pl s/a/b/ README.md", ARG),
    A("sed -f list.txt README.md", ARG),
    A("sed --sand -n p README.md", ARG),
    A("sed --follow-symlinks -n p README.md", ARG),
    A("sed p ../outside/secret.txt", OUTSIDE),
    # -- awk (gawk --sandbox) --------------------------------------------------------------------------
    A("awk 'BEGIN{system(\"touch MARKER\")}'", RAN),
    A('awk \'BEGIN{print "x" > "MARKER"}\'', RAN),
    A("awk 'BEGIN{\"id\" | getline x; print x}'", RAN),
    A('awk \'BEGIN{print "x" | "sh"}\'', RAN),
    A("awk 'BEGIN{while((getline l < \"../outside/secret.txt\")>0) print l}'", RAN),
    A("awk 'BEGIN{ARGV[1]=\"../outside/secret.txt\"; ARGC=2} {print}'", RAN),
    A("gawk 'BEGIN{system(\"touch MARKER\")}'", RAN),
    A("awk -f list.txt README.md", ARG),
    A("awk -o MARKER 1 README.md", ARG),
    A("awk --profile=MARKER 1 README.md", ARG),
    A("awk --prof=MARKER 1 README.md", ARG),
    A("awk -d 1 README.md", ARG),
    A("awk -l ext 1 README.md", ARG),
    A("awk -E list.txt", ARG),
    A("awk '{print}' ../outside/secret.txt", OUTSIDE),
    # gawk reads an @include'd file as program text even with --sandbox: its lines show in syntax errors
    A("awk '@include \"../outside/secret.txt\"' README.md", ARG),
    A("awk 'BEGIN{print 1} @include \"config/secrets.yaml\"'", ARG),
    A("awk '@include \".env\"' README.md", ARG),
    A("awk '@load \"filefuncs\"' README.md", ARG),
    A("awk '@namespace \"x\"; BEGIN{print 1}'", RAN),
    # -- sort, uniq, diff ------------------------------------------------------------------------------
    A("sort -o MARKER README.md", ARG),
    A("sort -uoMARKER README.md", ARG),
    A("sort --output=MARKER README.md", ARG),
    A("sort --outp=MARKER README.md", ARG),
    A("sort --compress-program=touch README.md", ARG),
    A("sort --compress-prog=touch README.md", ARG),
    A("sort -T . README.md", ARG),
    A("sort --random-source=/etc/shadow -R README.md", ARG),
    A("sort --files0-from=list.txt", ARG),
    A("uniq README.md MARKER", ARG),
    A("uniq -c README.md MARKER", ARG),
    A("diff README.md /etc/passwd", OUTSIDE),
    A("diff /dev/null README.md", OUTSIDE),
    A("diff --to-file=../outside/secret.txt README.md", OUTSIDE),
    A("diff -l README.md notes.md", ARG),
    A("diff --paginate README.md notes.md", ARG),
    A("diff --pag README.md notes.md", ARG),
    A("diff -X list.txt README.md notes.md", ARG),
    A("diff -r cmp/x cmp/y", RAN, os_layer=True),
    # -- jq --------------------------------------------------------------------------------------------
    A("jq --rawfile x ../outside/secret.txt -n '$x'", ARG),
    A("jq --slurpfile x /etc/passwd -n .", ARG),
    A("jq --argfile x list.txt -n .", ARG),
    A("jq -L . -n 'import \"x\" as x; .'", ARG),
    A("jq -f list.txt data.json", ARG),
    A("jq 'import \"x\" as x; .' data.json", ARG),
    A("jq 'include \"x\"; .' data.json", ARG),
    A("jq . ../outside/secret.txt", OUTSIDE),
    A("jq -n env", RAN),
    A("jq -n '$ENV'", RAN),
    # -- git: global options, sub-commands, options, operands ------------------------------------------
    A("git -c alias.x=!id x", ARG),
    A("git -c core.pager=id log", ARG),
    A("git -C /tmp log", ARG),
    A("git --git-dir=../outside log", ARG),
    A("git --work-tree=/ status", ARG),
    A("git --exec-path=/tmp status", ARG),
    A("git -p log", ARG),
    A("git --paginate log", ARG),
    A("git --config-env=core.pager=HOME log", ARG),
    A("git --list-cmds=main", ARG),
    A("git config --list", ARG),
    A("git config --file ../outside/secret.txt --list", ARG),
    A("git st", ARG),
    A("git clone ../outside x", ARG),
    A("git fetch", ARG),
    A("git push", ARG),
    A("git ls-remote 'ext::sh -c id'", ARG),
    A("git submodule update", ARG),
    A("git archive HEAD", ARG),
    A("git difftool", ARG),
    A("git help log", ARG),
    A("git gc", ARG),
    A("git commit -m x", ARG),
    A("git checkout .", ARG),
    A("git stash", ARG),
    A("git stash pop", ARG),
    A("git ls-tree -r HEAD", ARG),
    A("git log --output=MARKER", ARG),
    A("git grep -O TODO", ARG),
    A("git grep --open-files-in-pager=id TODO", ARG),
    A("git grep --open-files-in=true TODO", ARG),
    A("git grep -f ../outside/secret.txt", ARG),
    A("git grep --no-index SECRET", ARG),
    A("git diff --ext-diff", ARG),
    A("git diff --textconv", ARG),
    A("git diff --no-index README.md notes.md", ARG),
    A("git diff /dev/null /etc/passwd", OUTSIDE),
    A("git diff ../outside/secret.txt README.md", OUTSIDE),
    A("git blame --contents ../outside/secret.txt README.md", ARG),
    A("git blame -S list.txt README.md", ARG),
    A("git blame --ignore-revs-file ../outside/secret.txt README.md", ARG),
    A("git cat-file --filters HEAD:README.md", ARG),
    A("git cat-file --textconv HEAD:README.md", ARG),
    A("git cat-file -p HEAD:.env", DENIED),
    A("git show HEAD:.env", DENIED),
    A("git show HEAD:config/secrets.yaml", DENIED),
    A("git log -p -- .env", DENIED),
    A("git ls-files --exclude-from=../outside/secret.txt -o", ARG),
    A("git branch evil", ARG),
    A("git branch -D main", ARG),
    A("git tag evil", ARG),
    A("git tag -v v1", ARG),
    A("git log --show-signature", ARG),
    A("git rev-parse --resolve-git-dir ../outside", ARG),
    A("git log -L 1,1:README.md", ARG),
    # -- git through a poisoned .git/config: runs, executes nothing, shows no denied file ----------------
    A("git status", RAN),
    A("git status --short", RAN),
    A("git diff", RAN),
    A("git diff HEAD~1 --stat", RAN),
    A("git log -p", RAN),
    A("git log --oneline -5", RAN),
    A("git show HEAD", RAN),
    A("git grep -n KEY", RAN),
    A("git grep -n TODO HEAD", RAN),
    A("git blame README.md", RAN),  # .env is committed here but never deleted: no rename can start from it
    A("git blame -C README.md", ARG),  # with -C a line may come from any file, .env included
    A("git status -v", ARG),
    A("git log -p --full-diff -- README.md", ARG),
    A("git log -p -S TODO --pickaxe-all", ARG),
    A("git describe --always HEAD:README.md", ARG),
    A("git rev-parse --default HEAD:.env", DENIED),
    A("git ls-files", RAN),
    A("git cat-file -p HEAD:README.md", RAN),
    A("git shortlog -s", RAN),
    A("git log * ", RAN),
    # -- python3 (an operator rule with any arguments): only the OS layer holds it ----------------------
    A("python3 -c 'print(open(\"../outside/secret.txt\").read())'", RAN, os_layer=True),
    A("python3 -c 'print(open(\".env\").read())'", RAN, os_layer=True),
    A("python3 -c 'print(open(\"hard.txt\").read())'", RAN, os_layer=True),
    A('python3 -c \'open("MARKER", "w").write("x")\'', RAN, os_layer=True),
    A("python3 -c 'import os; print(os.environ)'", RAN),
    A("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 22), 1)'", RAN, os_layer=True),
    # -- resources: floods, sleeps, hogs, forks, daemons, FIFOs ----------------------------------------
    A("yes", RAN, truncated=True),
    A("yes | cat", RAN, truncated=True),
    A("awk 'BEGIN{while(1) print \"flood\"}'", RAN, truncated=True),
    A("printf '%99999999s'", RAN, truncated=True),  # 95 MiB of spaces: past the drain limit, in well under 1 s
    A("yes | head -3", RAN),
    A("sleep 100", TIMEOUT, timeout=1),
    A("sleep 100 | cat", TIMEOUT, timeout=1),
    A("cat | sleep 100", TIMEOUT, timeout=1),
    A("awk 'BEGIN{while(1){}}'", TIMEOUT, timeout=1),
    A("python3 -c 'x = bytearray(4 * 1024 ** 3)'", RAN),
    A("sed ':a;s/a/aaaaaaaa/;ta' aaa.txt", TIMEOUT, timeout=2),
    A("jq -n '[range(1e9)] | length'", TIMEOUT, timeout=2),
    A(
        "python3 -c 'import os, time\nfor _ in range(50):\n    if os.fork() == 0:\n        time.sleep(60)\n"
        "        os._exit(0)\ntime.sleep(60)'",
        TIMEOUT,
        timeout=1,
    ),
    A(
        "python3 -c 'import os, signal, sys, time\nif os.fork() == 0:\n    os.setsid()\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    if os.fork() == 0:\n        time.sleep(100)\n"
        '    os._exit(0)\nprint("parent done")\'',
        RAN,
        timeout=10,
    ),
    A(
        "python3 -c 'import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "os.setsid() if os.fork() == 0 else os._exit(0)\ntime.sleep(100)'",
        RAN,
        timeout=10,
    ),
    A("wc -l pipe.fifo", SPECIAL),
    A("head pipe.fifo", SPECIAL),
    A("grep -r x .", RAN, os_layer=True, timeout=5),
]

TEST_RULES: dict[str, Any] = {
    "python3": {"any_arguments": True},
    "yes": {"operands": "strings"},
}


def _cases() -> Iterator[Any]:
    for backend in (*os_backends(), "none"):
        for attack in ATTACKS:
            if backend == "none" and attack.os_layer:
                continue  # without an OS sandbox these are stopped by nothing: that is what os_layer means
            yield pytest.param(attack, backend, id=f"{backend}-{attack.command[:60]}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("attacks")
    root = build_repo(base)
    poison_git_config(root, base / "MARKER")
    return base, root


def test_attack_table_is_large_and_covers_every_backend() -> None:
    assert len(ATTACKS) >= 150
    assert len({(a.command, a.cwd) for a in ATTACKS}) == len(ATTACKS)
    assert os_backends(), "no OS sandbox backend works on this machine"


@pytest.mark.parametrize(("attack", "backend"), list(_cases()))
async def test_attack_is_refused_or_contained(
    attack: Attack, backend: str, hostile: tuple[Path, Path], make_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, root = hostile
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", HOST_ENV_SECRET)
    settings = make_settings(
        root,
        exec={"sandbox": backend, "allow": [*DEFAULT_ALLOW, *TEST_RULES], "rules": TEST_RULES},
        limits={"max_output_bytes": 65536},
    )
    workspace = Workspace(settings)
    session = uuid.uuid4().hex[:12]
    before = tree_snapshot(base)
    arguments: dict[str, Any] = {"command": attack.command.replace("MARKER", str(base / "MARKER")), "cwd": attack.cwd}
    if attack.timeout is not None:
        arguments["timeout"] = attack.timeout
    try:
        with anyio.fail_after(90):  # the command's own limit is 30 s; a loaded CI machine needs the rest
            outcome = await build_pipeline(workspace, TOOLS).call(
                "execute_bash", arguments, CallContext(session_id=session)
            )
    finally:
        workspace.close()
    payload = json.dumps(outcome.payload)
    if attack.expect == RAN:
        assert not outcome.is_error, payload
        assert outcome.payload["sandbox"] == Backend(backend).os_layer
        assert outcome.payload["stdout_truncated"] is attack.truncated, payload[:500]
        output = outcome.payload["stdout"] + outcome.payload["stderr"]
        assert leaked_names(output) - leaked_names(attack.command) == set(), payload[:2000]  # not the caller's own
    else:
        assert outcome.error_code == attack.expect, payload
    for secret in (*SECRETS, HOST_ENV_SECRET, PWNED):
        assert secret not in payload
    assert not (base / "MARKER").exists()
    assert tree_snapshot(base) == before
    assert tagged_processes(session) == []
