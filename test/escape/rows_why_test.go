package escape

// whyRows: the file of the run's denials (/run/stockade/denials) is the
// supervisor's, on the host; the sandbox sees it read-only, as a mount point
// in a tmpfs of its own, so the command can neither write nor truncate nor
// replace it, nor move its directory away and put a forged one in its
// place, nor forge a line through a denied name. Each row first has a
// connection denied, so that the file holds a line.
var whyRows = []row{
	{name: "why_denials_write", args: sh(denyThen("{probe} write /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_truncate", args: sh(denyThen("{probe} truncate /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_chmod", args: sh(denyThen("{probe} chmod /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_unlink", args: sh(denyThen("{probe} unlink /run/stockade/denials")), want: "DENIED EBUSY"},
	{name: "why_denials_rename_over", args: sh(denyThen("echo forged >/run/stockade/forged; {probe} rename /run/stockade/forged /run/stockade/denials")), want: "DENIED EBUSY"},
	{name: "why_denials_rename_away", args: sh(denyThen("{probe} rename /run/stockade/denials /run/stockade/moved")), want: "DENIED EBUSY"},
	{name: "why_denials_dir_rename", args: sh(denyThen("{probe} rename /run/stockade /run/moved")), want: "DENIED EBUSY"},
	{name: "why_denials_dir_rmdir", args: sh(denyThen("{probe} rmdir /run/stockade")), want: "DENIED EBUSY"},
	{name: "why_denials_umount", args: sh(denyThen("{probe} umount /run/stockade/denials")), want: "DENIED EPERM"},
	{name: "why_denials_dir_umount", args: sh(denyThen("{probe} umount /run/stockade")), want: "DENIED EPERM"},
	{name: "why_denials_remount_rw", args: sh(denyThen("{probe} remount-rw /run/stockade/denials")), want: "DENIED EPERM"},
	// A SOCKS5 name may hold any byte: one with a newline and a line of
	// its own must stay on its line, escaped.
	{name: "why_denials_forge_line", args: sh(`python3 -c 'import socket
s = socket.create_connection(("127.0.0.1", 1080), 5)
s.sendall(b"\x05\x01\x00"); s.recv(2)
h = b"x\n2000-01-01T00:00:00Z connect forged.example:443 | rule: FORGED"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + (443).to_bytes(2, "big")); s.recv(10)'
grep -q '^2000-01-01T00:00:00Z' /run/stockade/denials && echo OK FORGED || { grep -q 'x\\x0a2000' /run/stockade/denials && echo DENIED ESCAPED || echo "NO LINE"; }`),
		want: "DENIED ESCAPED"},
}

// denyThen has a connection denied (the file gets a line), checks that the
// file shows it, then runs the attempt.
func denyThen(attempt string) string {
	return `curl -s -o /dev/null http://denied.invalid/ ; grep -q 'denied.invalid:80 | rule: deny mode' /run/stockade/denials || { echo "NO LINE"; exit 0; }; ` + attempt
}
