package cli

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/stockade-dev/stockade/internal/session"
)

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish." placeholder:"SHELL"`
}

func (c *completionCmd) Help() string {
	return `Prints a completion script for SHELL: subcommands, flags, their values,
and session IDs after -s. Load it with:

  bash   source <(stockade completion bash)        (in ~/.bashrc)
  zsh    source <(stockade completion zsh)         (in ~/.zshrc, after compinit)
  fish   stockade completion fish > ~/.config/fish/completions/stockade.fish

The script asks 'stockade __complete' for the candidates at every TAB, so
it stays right as stockade changes.`
}

func (c *completionCmd) Run() error {
	_, err := fmt.Print(completionScripts[c.Shell])
	return err
}

// completeEntry is the hidden command the scripts call: `stockade
// __complete WORD... CURRENT` prints one candidate a line (a tab, then a
// description, where there is one), or one directive the script turns into
// the shell's own completion: ":file", ":dir" or ":command".
const completeEntry = "__complete"

// complete answers a completion request for the words after "stockade",
// the last being the one under the cursor (empty after a space).
func complete(words []string) int {
	parser, err := kong.New(&root{}, kong.Name("stockade"))
	if err != nil || len(words) == 0 {
		return 0
	}
	for _, c := range candidates(parser.Model.Node, words, sessionIDs) {
		fmt.Println(c)
	}
	return 0
}

// candidates walks the words before the cursor down the command tree and
// lists what may come at the cursor; ids lists the session IDs.
func candidates(node *kong.Node, words []string, ids func() []string) []string {
	prior, cur := words[:len(words)-1], words[len(words)-1]
	var want *kong.Flag // a flag whose value is the next word
	for i, w := range prior {
		switch {
		case want != nil && w == "=":
			// bash splits --session=ID at the '=' (COMP_WORDBREAKS).
		case want != nil:
			want = nil
		case w == "--":
			if i == len(prior)-1 {
				return []string{":command"}
			}
			return []string{":file"}
		case strings.HasPrefix(w, "-"):
			if f := findFlag(node, w); f != nil && !f.IsBool() && !f.IsCounter() && !strings.Contains(w, "=") {
				want = f
			}
		default:
			if child := findChild(node, w); child != nil {
				node = child
			}
		}
	}
	if want != nil {
		if cur == "=" {
			cur = ""
		}
		return filter(flagValues(want, ids), cur)
	}
	if name, value, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "--") {
		f := findFlag(node, name)
		if f == nil {
			return nil
		}
		var out []string
		for _, v := range flagValues(f, ids) {
			if !strings.HasPrefix(v, ":") {
				out = append(out, name+"="+v)
			}
		}
		return filter(out, name+"="+value)
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for _, group := range node.AllFlags(true) {
			for _, f := range group {
				out = append(out, "--"+f.Name+"\t"+firstSentence(f.Help))
				if f.Short != 0 {
					out = append(out, "-"+string(f.Short)+"\t"+firstSentence(f.Help))
				}
			}
		}
		return filter(out, cur)
	}
	var out []string
	for _, c := range node.Children {
		if !c.Hidden {
			out = append(out, c.Name+"\t"+firstSentence(c.Help))
		}
	}
	for _, p := range node.Positional {
		out = append(out, p.EnumSlice()...)
	}
	return filter(out, cur)
}

// flagValues are the candidates for f's value.
func flagValues(f *kong.Flag, ids func() []string) []string {
	switch f.Name {
	case "session":
		return ids()
	case "workdir":
		return []string{":dir"}
	case "ro", "rw", "protect", "mask", "unmask", "env-file":
		return []string{":file"}
	case "network":
		return []string{"proxy", "none"}
	case "agent-policy":
		return []string{"deny", "allow"}
	case "terminal":
		return []string{"filtered", "raw"}
	case "log-level":
		return []string{"debug", "info", "warn", "error"}
	}
	return f.EnumSlice()
}

func findFlag(node *kong.Node, word string) *kong.Flag {
	name, _, _ := strings.Cut(word, "=")
	for _, group := range node.AllFlags(false) {
		for _, f := range group {
			if name == "--"+f.Name || f.Short != 0 && name == "-"+string(f.Short) {
				return f
			}
		}
	}
	return nil
}

func findChild(node *kong.Node, name string) *kong.Node {
	for _, c := range node.Children {
		if c.Name == name && c.Type == kong.CommandNode {
			return c
		}
	}
	return nil
}

// filter keeps the candidates that start with prefix; directives always.
func filter(cands []string, prefix string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, ":") || strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func firstSentence(help string) string {
	s, _, _ := strings.Cut(help, ". ")
	return strings.TrimSuffix(s, ".")
}

// sessionIDs lists every session, newest first, with its command: the
// session commands take ended sessions too (logs, delete).
func sessionIDs() []string {
	home := realHome()
	if home == "" {
		return nil
	}
	all, _ := session.NewStore(stateHome(home)).List()
	var out []string
	for _, s := range all {
		cmd := strings.Join(s.Command, " ")
		if len(cmd) > 40 {
			cmd = cmd[:37] + "..."
		}
		out = append(out, fmt.Sprintf("%s\t%s, %s", s.ID, s.Effective(), cmd))
	}
	return out
}

// completionScripts ask `stockade __complete` at every TAB and turn its
// directives into the shell's own file, directory and command completion.
var completionScripts = map[string]string{
	"bash": `# bash completion for stockade: source <(stockade completion bash)
_stockade() {
	local cur=${COMP_WORDS[COMP_CWORD]} line
	local -a cands=()
	COMPREPLY=()
	while IFS= read -r line; do
		case $line in
		:file) COMPREPLY+=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
		:dir) COMPREPLY+=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null ;;
		:command) COMPREPLY+=($(compgen -c -- "$cur")) ;;
		*) cands+=("${line%%$'\t'*}") ;;
		esac
	done < <("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
	COMPREPLY+=("${cands[@]}")
}
complete -F _stockade stockade
`,
	"zsh": `#compdef stockade
# zsh completion for stockade: source <(stockade completion zsh)
_stockade() {
	local -a cands
	local line
	for line in "${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
		case $line in
		:file) _files ;;
		:dir) _files -/ ;;
		:command) _command_names -e ;;
		*$'\t'*) cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}") ;;
		?*) cands+=("${line//:/\\:}") ;;
		esac
	done
	(( ${#cands} )) && _describe -t stockade stockade cands
	return 0
}
if (( $+functions[compdef] )); then
	compdef _stockade stockade
fi
`,
	"fish": `# fish completion for stockade: stockade completion fish > ~/.config/fish/completions/stockade.fish
function __stockade_complete
	set -l words (commandline -opc) (commandline -ct)
	for line in (command $words[1] __complete $words[2..-1] 2>/dev/null)
		switch $line
			case :file
				__fish_complete_path (commandline -ct)
			case :dir
				__fish_complete_directories (commandline -ct)
			case :command
				complete -C (commandline -ct)
			case '*'
				echo $line
		end
	end
end
complete -c stockade -f -a '(__stockade_complete)'
`,
}

// completeRequest reports whether args ask for completion candidates, and
// the words to complete.
func completeRequest(args []string) ([]string, bool) {
	if len(args) < 2 || args[1] != completeEntry {
		return nil, false
	}
	return args[2:], true
}
