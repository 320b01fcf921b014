// Package accept keeps a server's accept loop alive when a hostile client
// runs it out of descriptors, and caps the connections it holds.
//
// A supervisor serves listeners that the sandboxed command can connect to
// at will (the egress proxy at 127.0.0.1:3128, the auth proxy). Every
// connection costs the supervisor a descriptor. Unbounded, a command that
// opens tens of thousands of them leaves none for the control socket, the
// audit log or the session files; and an accept loop that returns on the
// first "too many open files" never serves again, even after the command
// lets go.
//
// Listen and Cap.Listen wrap a listener so that neither can happen:
//
//	conns := accept.NewCap(1024, onFull)
//	go srv.Serve(conns.Listen(ln, accept.RefuseHTTP("too many connections"))) // a 503
//	go ctl.Serve(accept.Listen(sock))                                         // retries only
//
// Accept retries temporary errors (EMFILE, ENFILE, ENOBUFS, ENOMEM,
// ECONNABORTED, timeouts) with a backoff from 5 ms to 1 s instead of
// returning them, so a server stops only when its listener is closed. A Cap
// shared by several listeners holds at most Max of their connections open at
// once; a connection over the cap is accepted, given the protocol's refusal
// (an HTTP 503 naming the cap) by one of a few refusers, closed, and
// counted. The first refusal calls the cap's OnFull once; the count is
// Refused, for a summary, so that a flood of refusals is not a flood of log
// lines.
//
// Limitations: accepting a connection only to refuse it costs a descriptor
// for a moment, so the caller must keep a reserve of descriptors above the
// caps (see job.ConnCaps). ENFILE, the whole system's table, cannot be
// reserved against: it is retried like the rest.
package accept
