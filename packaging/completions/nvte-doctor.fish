# fish completion for nvte-doctor(1): subcommands, options, option values, rule ids, files.
# Key idea, as in the bash and zsh completions: the binary's own --help (CLI11) is the source of
# truth, so the completion never goes stale: `nvte-doctor [SUBCOMMAND...] --help` is parsed once
# per subcommand path and cached for the shell session. Rule ids come from `nvte-doctor rules
# list` (first column). Installed as /usr/share/fish/vendor_completions.d/nvte-doctor.fish.

# __nvte_doctor_spec BINARY PATH...: the parsed help, one entry per line:
# "opt<TAB>-o,--output<TAB>1<TAB>text json" (1: takes a value; then its choices), "sub<TAB>NAME".
function __nvte_doctor_spec
    set -l key __nvte_doctor_spec_(string escape --style=var -- "$argv")
    if not set -q $key
        set -l spec
        set -l section ''
        for line in (command $argv --help 2>/dev/null)
            switch $line
                case 'Options:*'
                    set section opt
                    continue
                case 'Subcommands:*'
                    set section sub
                    continue
                case 'Positionals:*'
                    set section pos
                    continue
                case ''
                    set section ''
                    continue
            end
            if not string match -qr '^ ' -- $line
                set section ''
                continue
            end
            test -n "$section"; or continue
            set -l head (string trim -l -- $line | string replace -r '  .*$' '')
            set -l names (string split -m1 ' ' -- $head)[1]
            switch $section
                case opt
                    string match -q -- '-*' $names; or continue
                    set -l takes 0
                    string match -q -- '* *' $head; and set takes 1
                    set -l choices (string match -r '\{([^}]*)\}' -- $head)[2]
                    set -a spec (printf 'opt\t%s\t%s\t%s' $names $takes (string replace -a ',' ' ' -- "$choices"))
                case sub
                    set -a spec (printf 'sub\t%s' $names)
            end
        end
        set -g $key $spec
    end
    printf '%s\n' $$key
end

# __nvte_doctor_option BINARY PATH... -- OPTION: "TAKES<TAB>CHOICES" of OPTION along the path
# (options fall through to subcommands, so the parents' count too); nothing when unknown.
function __nvte_doctor_option
    set -l sep (contains -i -- -- $argv)
    set -l option $argv[(math $sep + 1)]
    set -l cmd $argv[1..(math $sep - 1)]
    while test (count $cmd) -ge 1
        for entry in (__nvte_doctor_spec $cmd)
            set -l f (string split \t -- $entry)
            if test "$f[1]" = opt; and contains -- $option (string split , -- $f[2])
                printf '%s\t%s\n' $f[3] "$f[4]"
                return 0
            end
        end
        set -e cmd[-1]
    end
    return 1
end

function __nvte_doctor_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l binary $tokens[1]
    set -e tokens[1]
    set -l path
    set -l pending ''
    for token in $tokens
        if test -n "$pending"
            set pending ''
            continue
        end
        if string match -q -- '-*' $token
            string match -q -- '*=*' $token; and continue
            set -l info (__nvte_doctor_option $binary $path -- $token)
            and test (string split \t -- $info)[1] = 1; and set pending $token
            continue
        end
        for entry in (__nvte_doctor_spec $binary $path)
            if test "$entry" = (printf 'sub\t%s' $token)
                set -a path $token
                break
            end
        end
    end
    # The value of an option: its choices, else files.
    set -l option $pending
    set -l prefix ''
    if test -z "$option"; and string match -qr -- '^(--[^=]+)=(.*)$' $current
        set option (string split -m1 = -- $current)[1]
        set prefix $option=
        set current (string split -m1 = -- $current)[2]
    end
    if test -n "$option"
        set -l info (string split \t -- (__nvte_doctor_option $binary $path -- $option))
        if test -n "$info[2]"
            printf "$prefix%s\n" (string split ' ' -- $info[2])
        else
            printf "$prefix%s\n" (__fish_complete_path $current)
        end
        return
    end
    if string match -q -- '-*' $current
        set -l cmd $binary $path
        while test (count $cmd) -ge 1
            for entry in (__nvte_doctor_spec $cmd)
                set -l f (string split \t -- $entry)
                test "$f[1]" = opt; and printf '%s\n' (string split , -- $f[2])
            end
            set -e cmd[-1]
        end
        return
    end
    if test "$path" = 'rules show'
        command $binary rules list 2>/dev/null | string replace -r '\s.*$' ''
        return
    end
    set -l subs
    for entry in (__nvte_doctor_spec $binary $path)
        set -l f (string split \t -- $entry)
        test "$f[1]" = sub; and set -a subs $f[2]
    end
    if test (count $subs) -gt 0
        printf '%s\n' $subs
        return
    end
    # Positionals (fleet's reports, rules lint's directories): files.
    __fish_complete_path $current
end

complete -c nvte-doctor -f -a '(__nvte_doctor_complete)'
