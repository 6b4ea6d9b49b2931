# Shared by the CLI test scripts (test_cli_*.sh), sourced after they set `dir`:
#   fail MSG...   count a failure and say why
#   run CMD...    $out gets stdout and stderr together, $rc the exit status; in sanitizer
#                 builds a report (a leak on an error path, say) fails the case whatever
#                 the exit status
#   has TEXT      the last run's output contains TEXT
#   ok NAME       the last run exited 0
#   refused NAME TEXT...  the last run exited non-zero and printed every TEXT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

run() {
    out=$("$@" 2>&1)
    rc=$?
    case $out in
        *Sanitizer* | *"runtime error:"*) fail "$*: sanitizer report: $out" ;;
    esac
}

has() {
    case $out in *"$1"*) return 0 ;; esac
    return 1
}

ok() {
    [ "$rc" -eq 0 ] || fail "$1: exit status $rc: $out"
}

refused() {
    name=$1
    shift
    [ "$rc" -ne 0 ] || fail "$name: exit status 0 (want non-zero); output: $out"
    for want in "$@"; do
        has "$want" || fail "$name: output lacks '$want': $out"
    done
}
