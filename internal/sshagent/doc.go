// Package sshagent is the SSH agent the sandbox sees with --ssh: a filter,
// served by the supervisor, in front of the user's own agent. It speaks the
// agent protocol (draft-miller-ssh-agent) itself and forwards only what a
// client needs to authenticate:
//
//   - REQUEST_IDENTITIES, answered with the user's keys, or only the ones
//     Config.Keys names;
//   - SIGN_REQUEST, for one of those keys, recorded in the audit log with
//     the key's fingerprint and what the client says it signs (the user and
//     service of an SSH login, the namespace of an ssh-keygen -Y signature,
//     the server's host key when the client binds the session);
//   - the session-bind@openssh.com extension, which only restricts what the
//     user's agent will sign on that connection (keys added with
//     ssh-add -h), so the user's agent sees it.
//
// Everything else is answered SSH_AGENT_FAILURE without reaching the user's
// agent: adding or removing keys, locking and unlocking it, smartcards, the
// other extensions (query included: a client falls back without it), and the
// SSH-1 requests. So is a message that is malformed or longer than
// MaxMessage, after which the connection is closed: the length prefix can
// no longer be trusted. The private keys stay in the user's agent; the
// sandbox holds only a socket to the filter.
//
// The supervisor makes the socket in a private directory on the host, which
// the sandbox sees read-only at sandboxnet.SSHAgentDir (see docs/egress.md,
// "SSH agent").
package sshagent
