# bash completion for nvte-doctor(1): subcommands, options, option values, rule ids, files.
# Key idea: the binary's own --help (CLI11) is the source of truth, so the completion never
# goes stale: `nvte-doctor [SUBCOMMAND...] --help` is parsed once per subcommand path and
# cached for the shell session. Rule ids come from `nvte-doctor rules list` (first column).
# Installed as /usr/share/bash-completion/completions/nvte-doctor; needs no bash-completion
# helpers, only bash 4.

declare -gA _nvte_doctor_help_cache=()

# _nvte_doctor_spec BINARY PATH...: the parsed help of `BINARY PATH... --help`, one entry per
# line: "opt<TAB>-o,--output<TAB>1<TAB>" (1 = takes a value; 4th field: choices, space
# separated), "sub<TAB>NAME" or "pos<TAB>NAME".
_nvte_doctor_spec() {
    local binary="$1"; shift
    local key="$binary|$*"
    if [[ -z "${_nvte_doctor_help_cache[$key]+set}" ]]; then
        local line section="" spec="" head names type choices
        while IFS= read -r line; do
            case "$line" in
                Options:*) section=opt; continue ;;
                Subcommands:*) section=sub; continue ;;
                Positionals:*) section=pos; continue ;;
                "") section=""; continue ;;
                [^\ ]*) section=""; continue ;;
            esac
            [[ -n "$section" ]] || continue
            line="${line#"${line%%[! ]*}"}"          # leading blanks
            head="${line%%  *}"                       # up to the description column
            names="${head%% *}"
            case "$section" in
                opt)
                    [[ "$names" == -* ]] || continue
                    type=""; [[ "$head" == *" "* ]] && type="${head#* }"
                    choices=""
                    if [[ "$type" =~ \{([^}]*)\} ]]; then choices="${BASH_REMATCH[1]//,/ }"; fi
                    spec+=$'opt\t'"$names"$'\t'"$([[ -n "$type" ]] && echo 1 || echo 0)"$'\t'"$choices"$'\n' ;;
                sub) spec+=$'sub\t'"$names"$'\n' ;;
                pos) spec+=$'pos\t'"$names"$'\n' ;;
            esac
        done < <("$binary" "$@" --help 2>/dev/null)
        _nvte_doctor_help_cache[$key]="$spec"
    fi
    printf '%s' "${_nvte_doctor_help_cache[$key]}"
}

# _nvte_doctor_option_info SPEC OPTION: prints "TAKES<TAB>CHOICES" for OPTION, nothing if unknown.
_nvte_doctor_option_info() {
    local kind names takes choices
    while IFS=$'\t' read -r kind names takes choices; do
        if [[ "$kind" == opt && ",$names," == *",$2,"* ]]; then
            printf '%s\t%s' "$takes" "$choices"
            return 0
        fi
    done <<< "$1"
    return 1
}

# _nvte_doctor_values OPTION CHOICES CUR: completions for an option's value.
_nvte_doctor_values() {
    local option="$1" choices="$2" cur="$3"
    if [[ -n "$choices" ]]; then
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
        return
    fi
    case "$option" in
        --rules|--root|--node-root)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur")) ;;
        -o|--output|--facts|--node-facts|--image-config|--termination-log|-w|--workload|--hf-config|--megatron-args|--te-log|--config|--python)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur")) ;;
        *) COMPREPLY=() ;;
    esac
}

_nvte_doctor() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local binary="${COMP_WORDS[0]}"
    binary="${binary/#\~/$HOME}"
    if [[ "$binary" == */* ]]; then
        [[ -x "$binary" ]] || binary=nvte-doctor
    fi
    command -v "$binary" >/dev/null 2>&1 || return 0

    # Walk the words before the cursor: descend into subcommands, skip option values.
    local -a path=()
    local spec word i info skip=0
    spec="$(_nvte_doctor_spec "$binary")"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        if ((skip)); then skip=0; continue; fi
        if [[ "$word" == "=" ]]; then skip=1; continue; fi
        if [[ "$word" == -* ]]; then
            [[ "$word" == *=* ]] && continue
            info="$(_nvte_doctor_option_info "$spec" "$word")" || continue
            [[ "${info%%$'\t'*}" == 1 && "${COMP_WORDS[i+1]}" != "=" ]] && skip=1
            continue
        fi
        if grep -qx $'sub\t'"$word" <<< "$spec"; then
            path+=("$word")
            spec="$(_nvte_doctor_spec "$binary" "${path[@]}")"
        fi
    done

    # The value of an option: "--format json", "--format=json" (bash splits at '=').
    local option="" prefix=""
    if [[ "$cur" == "=" && "${COMP_WORDS[COMP_CWORD-1]}" == -* ]]; then
        option="${COMP_WORDS[COMP_CWORD-1]}"; cur=""
    elif [[ "${COMP_WORDS[COMP_CWORD-1]}" == "=" && "${COMP_WORDS[COMP_CWORD-2]}" == -* ]]; then
        option="${COMP_WORDS[COMP_CWORD-2]}"
    elif [[ "$cur" == --*=* ]]; then
        option="${cur%%=*}"; prefix="$option="; cur="${cur#*=}"
    elif ((COMP_CWORD > 1)) && [[ "${COMP_WORDS[COMP_CWORD-1]}" == -* ]]; then
        info="$(_nvte_doctor_option_info "$spec" "${COMP_WORDS[COMP_CWORD-1]}")"
        [[ "${info%%$'\t'*}" == 1 ]] && option="${COMP_WORDS[COMP_CWORD-1]}"
    fi
    if [[ -n "$option" ]]; then
        info="$(_nvte_doctor_option_info "$spec" "$option")" || return 0
        _nvte_doctor_values "$option" "${info#*$'\t'}" "$cur"
        if [[ -n "$prefix" ]]; then COMPREPLY=("${COMPREPLY[@]/#/$prefix}"); fi
        return 0
    fi

    if [[ "$cur" == -* ]]; then
        local kind names takes choices name opts=""
        while IFS=$'\t' read -r kind names takes choices; do
            [[ "$kind" == opt ]] && opts+=" ${names//,/ }"
        done <<< "$spec"
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi

    # Subcommands, then what the positional arguments of this subcommand take.
    local subs="" positional=""
    subs="$(sed -n 's/^sub\t//p' <<< "$spec" | tr '\n' ' ')"
    positional="$(sed -n 's/^pos\t//p' <<< "$spec" | head -n 1)"
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    case "$positional" in
        id)
            local ids
            ids="$("$binary" rules list 2>/dev/null | awk '{print $1}')"
            COMPREPLY+=($(compgen -W "$ids" -- "$cur")) ;;
        dirs)
            compopt -o filenames 2>/dev/null
            COMPREPLY+=($(compgen -d -- "$cur")) ;;
        "") ;;
        *)
            compopt -o filenames 2>/dev/null
            COMPREPLY+=($(compgen -f -- "$cur")) ;;
    esac
    return 0
}

complete -F _nvte_doctor nvte-doctor
