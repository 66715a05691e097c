#!/usr/bin/env python3
"""Extract gitleaks' public rule examples into a JSON fixture for cchist's breadth test.

gitleaks (MIT) keeps, next to each rule in cmd/generate/config/rules/*.go, the example
strings its own generator validates the rule against: `tps` (true positives) and `fps`
(false positives). This script reads those files at one commit of a gitleaks git
directory and writes every example that is a plain Go string literal (or a `+` join of
literals), plus the texts `utils.GenerateSampleSecret(s)` builds from a literal secret.
Examples computed at run time (random secrets, fmt.Sprintf, loops) are skipped: they are
not reproducible text.

Usage:
    scripts/gitleaks-examples.py GITLEAKS_GIT_DIR [COMMIT] [-o OUT.json]

Output: {"commit": ..., "examples": [{"rule": id, "kind": "tp"|"fp",
          "source": "literal"|"sample", "text": ...}, ...],
          "rules": [...], "allowlist": {...}}

`rules` and `allowlist` are gitleaks' own detection config at the same commit
(config/gitleaks.toml: regex, entropy, keywords, secretGroup, per-rule allowlists; the
global allowlist's regexes and stopwords). The breadth test runs them to tell which false
positives of one rule are another rule's true positive: gitleaks lists, for example, an
Anthropic admin key among the API-key rule's false positives, and a scanner that redacts it
is right to.
"""

import argparse
import json
import re
import subprocess
import sys
import tomllib

RULES_DIR = "cmd/generate/config/rules"

# utils.GenerateSampleSecrets' templates, as in cmd/generate/config/utils/generate.go.
SAMPLE_TEMPLATES = {
    "ini - quoted1": '{i}Token="{s}"',
    "ini - quoted2": '{i}Token = "{s}"',
    "ini - unquoted1": "{i}Token={s}",
    "ini - unquoted2": "{i}Token = {s}",
    "json - string": '{\n    "{i}_token": "{s}"\n}',
    "json - escaped newline in string": '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
    "xml - element multiline": "<{i}Token>\n    {s}\n</{i}Token>",
    "yaml - singleline - unquoted": "{i}_token: {s}",
    "yaml - singleline - single quote": "{i}_token: '{s}'",
    "yaml - singleline - double quote": '{i}_token: "{s}"',
    "C#": 'string {i}Token = "{s}";',
    "go - normal": 'var {i}Token string = "{s}"',
    "go - short": '{i}Token := "{s}"',
    "go - backticks": "{i}Token := `{s}`",
    "java": 'String {i}Token = "{s}";',
    "kotlin - notype": 'var {i}Token = "{s}"',
    "php - string concat": '${i}Token .= "{s}"',
    "python - single quote": "{i}Token = '{s}'",
    "python - double quote": '{i}Token = "{s}"',
    "misc - comma operator": 'System.setProperty("{I}_TOKEN", "{s}")',
    "logstash": '  "{i}Token" => "{s}"',
    "make - recursive assignment": '{i}_TOKEN = "{s}"',
    "make - simple assignment": '{i}_TOKEN := "{s}"',
    "make - shell assignment": '{i}_TOKEN ::= "{s}"',
    "make - evaluated shell assignment": '{i}_TOKEN :::= "{s}"',
    "make - conditional assignment": '{i}_TOKEN ?= "{s}"',
}


def sample_secrets(ident, secret):
    out = []
    for key in sorted(SAMPLE_TEMPLATES):
        t = SAMPLE_TEMPLATES[key]
        # strings.NewReplacer: one left-to-right pass, no re-scanning of replacements.
        out.append(
            re.sub(
                r"\{i\}|\{I\}|\{s\}",
                lambda m: {"{i}": ident, "{I}": ident.upper(), "{s}": secret}[m.group(0)],
                t,
            )
        )
    return out


def sample_secret(ident, secret):
    return '%s_api_token = "%s"' % (ident, secret)


# ---- a small Go tokenizer: strings, identifiers, punctuation, newlines; comments dropped.

TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<chr>'(?:[^'\\\n]|\\.)+')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[0-9][0-9a-fA-FxX_.]*)
  | (?P<punct>\.\.\.|:=|[-+*/%&|^<>=!]=?|[(){}\[\],;:.])
    """,
    re.S | re.X,
)


def unquote_go(lit):
    """Decode an interpreted Go string literal (with its quotes)."""
    body = lit[1:-1]
    out = bytearray()
    i = 0
    simple = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34, "'": 39}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif e == "u":
            out += chr(int(body[i + 2 : i + 6], 16)).encode("utf-8")
            i += 6
        elif e == "U":
            out += chr(int(body[i + 2 : i + 10], 16)).encode("utf-8")
            i += 10
        elif e in "01234567":
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise ValueError("unknown escape \\%s" % e)
    return out.decode("utf-8", errors="surrogateescape")


def tokenize(src):
    toks = []
    pos = 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            # Anything else (runes etc.) is an opaque token.
            toks.append(("other", src[pos]))
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup
        text = m.group(0)
        if kind in ("ws", "lc"):
            continue
        if kind == "bc":
            if "\n" in text:
                toks.append(("nl", "\n"))
            continue
        if kind == "raw":
            toks.append(("str", text[1:-1].replace("\r", "")))
        elif kind == "str":
            toks.append(("str", unquote_go(text)))
        else:
            toks.append((kind, text))
    return toks


OPEN = {"(": ")", "{": "}", "[": "]"}


def split_top(toks, sep=","):
    """Split a token list at top-level separators, dropping newlines."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t[0] == "nl":
            continue
        if t[0] == "punct" and t[1] in OPEN:
            depth += 1
        elif t[0] == "punct" and t[1] in (")", "}", "]"):
            depth -= 1
        if depth == 0 and t == ("punct", sep):
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def literal(toks):
    """A `+` join of string literals, or None."""
    if not toks or len(toks) % 2 == 0:
        return None
    for k, t in enumerate(toks):
        if k % 2 == 0 and t[0] != "str":
            return None
        if k % 2 == 1 and t != ("punct", "+"):
            return None
    return "".join(t[1] for k, t in enumerate(toks) if k % 2 == 0)


def call(toks, name):
    """Arguments of `utils.NAME(...)` when toks is exactly that call, else None."""
    head = [("ident", "utils"), ("punct", "."), ("ident", name), ("punct", "(")]
    if toks[: len(head)] != head or toks[-1] != ("punct", ")"):
        return None
    inner = toks[len(head) : -1]
    depth = 0
    for t in inner:  # the closing paren must be the call's own
        if t[0] == "punct" and t[1] in OPEN:
            depth += 1
        elif t[0] == "punct" and t[1] in (")", "}", "]"):
            depth -= 1
            if depth < 0:
                return None
    return split_top(inner)


def eval_elem(toks):
    """One slice element -> [(text, source)]."""
    lit = literal(toks)
    if lit is not None:
        return [(lit, "literal")]
    args = call(toks, "GenerateSampleSecret")
    if args and len(args) == 2:
        a, b = literal(args[0]), literal(args[1])
        if a is not None and b is not None:
            return [(sample_secret(a, b), "sample")]
    return []


def eval_list(toks):
    """A []string-valued expression -> [(text, source)]."""
    toks = [t for t in toks if t[0] != "nl"]
    if toks[:3] == [("punct", "["), ("punct", "]"), ("ident", "string")] and toks[3] == (
        "punct",
        "{",
    ):
        body = toks[4:-1]
        out = []
        for el in split_top(body):
            out += eval_elem(el)
        return out
    args = call(toks, "GenerateSampleSecrets")
    if args and len(args) == 2:
        a, b = literal(args[0]), literal(args[1])
        if a is not None and b is not None:
            return [(s, "sample") for s in sample_secrets(a, b)]
        return []
    if toks and toks[0] == ("ident", "append") and toks[1] == ("punct", "("):
        args = split_top(toks[2:-1])
        out = []
        for arg in args[1:]:
            if arg and arg[-1] == ("punct", "..."):
                out += eval_list(arg[:-1])
            else:
                out += eval_elem(arg)
        return out
    return []


def statement_end(toks, i):
    """Index just past the expression starting at i (ends at a newline at depth 0)."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        if t[0] == "punct" and t[1] in OPEN:
            depth += 1
        elif t[0] == "punct" and t[1] in (")", "}", "]"):
            if depth == 0:
                return i
            depth -= 1
        elif t[0] == "nl" and depth == 0:
            # A trailing binary operator continues the expression on the next line.
            prev = toks[i - 1]
            if not (prev[0] == "punct" and prev[1] in ("+", ",", "(", "{", "[")):
                return i
        i += 1
    return i


def extract(src):
    toks = tokenize(src)
    out = []
    rule = None
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == ("ident", "RuleID") and toks[i + 1] == ("punct", ":") and toks[i + 2][0] == "str":
            rule = toks[i + 2][1]
            i += 3
            continue
        if (
            t[0] == "ident"
            and t[1] in ("tps", "fps")
            and toks[i + 1][0] == "punct"
            and toks[i + 1][1] in (":=", "=")
            and (i == 0 or toks[i - 1][0] == "nl")
        ):
            end = statement_end(toks, i + 2)
            if rule is not None:
                kind = "tp" if t[1] == "tps" else "fp"
                for text, source in eval_list(toks[i + 2 : end]):
                    out.append({"rule": rule, "kind": kind, "source": source, "text": text})
            i = end
            continue
        i += 1
    return out


def git(gitdir, *args):
    return subprocess.run(
        ["git", "-C", gitdir, *args], check=True, capture_output=True
    ).stdout.decode("utf-8")


def detection_config(toml_text):
    """gitleaks' rules and global allowlist, reduced to what matching a text needs."""
    cfg = tomllib.loads(toml_text)

    def allow(a):
        return {
            "condition": a.get("condition", "OR").upper(),
            "target": a.get("regexTarget", "secret"),
            "regexes": a.get("regexes", []),
            "stopwords": a.get("stopwords", []),
            "paths": bool(a.get("paths")),
        }

    rules = []
    for r in cfg.get("rules", []):
        if "regex" not in r:
            continue  # path-only rules match file names, not text
        rules.append(
            {
                "id": r["id"],
                "regex": r["regex"],
                "entropy": r.get("entropy", 0.0),
                "keywords": r.get("keywords", []),
                "secret_group": r.get("secretGroup", 0),
                "allowlists": [allow(a) for a in r.get("allowlists", [])],
            }
        )
    g = cfg.get("allowlist", {})
    return rules, {"regexes": g.get("regexes", []), "stopwords": g.get("stopwords", [])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gitdir")
    ap.add_argument("commit", nargs="?", default="HEAD")
    ap.add_argument("-o", "--out", default="-")
    args = ap.parse_args()
    commit = git(args.gitdir, "rev-parse", args.commit + "^{commit}").strip()
    files = sorted(
        f
        for f in git(args.gitdir, "ls-tree", "--name-only", commit, RULES_DIR + "/").split("\n")
        if f.endswith(".go") and not f.endswith("_test.go")
    )
    examples = []
    for f in files:
        examples += extract(git(args.gitdir, "show", "%s:%s" % (commit, f)))
    rules, allowlist = detection_config(git(args.gitdir, "show", "%s:config/gitleaks.toml" % commit))
    doc = {
        "source": "gitleaks/gitleaks " + RULES_DIR,
        "commit": commit,
        "license": "MIT (see LICENSE beside this file)",
        "examples": examples,
        "rules": rules,
        "allowlist": allowlist,
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    rules = {e["rule"] for e in examples}
    by = {}
    for e in examples:
        by[(e["kind"], e["source"])] = by.get((e["kind"], e["source"]), 0) + 1
    print(
        "%d examples from %d rules at %s: %s" % (len(examples), len(rules), commit[:12], by),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
