#!/bin/sh
# Regenerates expected.tsv: for every expression in exprs.txt, the days of Nov-Dec 2026 (one
# character per day from Sun 2026-11-01, '#' = fires) according to robfig/cron v3 (the parser
# Kubernetes CronJob uses) and croniter. Where exprs.txt gives a second column (day-of-week
# forms with 7, which robfig rejects), robfig reads that equivalent instead. Needs Go, a
# robfig/cron v3 checkout in ROBFIG_DIR (its commit in ROBFIG_REV if it is not a git work tree)
# and `pip install croniter`. The Rust tests read only expected.tsv.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${ROBFIG_DIR:?set ROBFIG_DIR to a robfig/cron v3 checkout}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/robfig_days.go" "$work/main.go"
cat > "$work/go.mod" <<MOD
module gen

go 1.19

require github.com/robfig/cron/v3 v3.0.0

replace github.com/robfig/cron/v3 => $ROBFIG_DIR
MOD
(cd "$work" && GOPROXY=off GOFLAGS=-mod=mod go run . < "$here/exprs.txt") > "$work/robfig"
python3 "$here/croniter_days.py" < "$here/exprs.txt" > "$work/croniter"
{
  printf '# expression\trobfig/cron v3 (%s)\tcroniter %s\trobfig read\n' \
    "$(git -C "$ROBFIG_DIR" rev-parse --short HEAD 2>/dev/null || echo "${ROBFIG_REV:-checkout}")" \
    "$(python3 -c 'import importlib.metadata as m; print(m.version("croniter"))')"
  cut -f1 "$here/exprs.txt" > "$work/exprs"
  awk -F'\t' '{ print (NF > 1 ? $2 : "") }' "$here/exprs.txt" > "$work/read"
  paste "$work/exprs" "$work/robfig" "$work/croniter" "$work/read"
} > "$here/expected.tsv"
