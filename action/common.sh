# shellcheck shell=bash
# What the action's scripts share (in bash 3.2, macOS's /bin/bash, as they all are): workflow commands, escaped as the runner reads them, and the
# step's outputs. Sourced by install, run and on-retry; it runs nothing by itself.

# The message of a workflow command (::warning::MESSAGE), escaped as the runner unescapes it:
# %, CR and LF as %25, %0D and %0A, so that text from outside cannot end the line or start a
# command of its own.
escape_data() {
  local s=${1//'%'/%25}
  s=${s//$'\r'/%0D}
  printf '%s' "${s//$'\n'/%0A}"
}

# A workflow command, on stdout where the runner reads it: `command kind message`.
command_line() {
  printf '::%s::%s\n' "$1" "$(escape_data "$2")"
}

# A value from outside, as a shell would write it (printf %q: control characters as $'\n'),
# for an error that names it.
shown() {
  printf '%q' "$1"
}

# A bad input: an error that names the input and its value, exit 125, nothing run.
bad_input() {
  command_line error "retry action: input $1: $2 (got $(shown "$3"))"
  exit 125
}

# Sets the step's output NAME to VALUE in $GITHUB_OUTPUT, in the NAME<<DELIMITER form that
# any value fits (a random delimiter it cannot contain).
set_output() {
  local delimiter
  delimiter="EOF_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  {
    printf '%s<<%s\n' "$1" "$delimiter"
    printf '%s\n' "$2"
    printf '%s\n' "$delimiter"
  } >>"${GITHUB_OUTPUT:?the runner sets GITHUB_OUTPUT}"
}

# Whether the boolean input NAME is true (GitHub writes true or false, any case, as its
# runner reads them); anything else is bad input. (bash 3.2, macOS's own, has no ${v,,}.)
is_true() {
  case $2 in
    [Tt][Rr][Uu][Ee]) return 0 ;;
    [Ff][Aa][Ll][Ss][Ee]) return 1 ;;
    *) bad_input "$1" "true or false" "$2" ;;
  esac
}
