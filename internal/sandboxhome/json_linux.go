//go:build linux

package sandboxhome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// maxJSON bounds the settings file stockade reads: the sandboxed command
// writes it, and could make it as large as the disk.
const maxJSON = 16 << 20

// EditJSON changes the JSON object in the file rel (the agent's settings)
// with edit, keeping every key edit leaves alone, and writes it back only
// if edit reports a change. A missing or empty file counts as {}. The file
// is read without following a link and written as a new file renamed over
// rel, as WriteGuide does; what is not a regular file holding one JSON
// object of at most maxJSON bytes is the user's, or the sandbox's doing,
// and is left as it is, with a warning: the agent then asks its start-up
// questions, and nothing else is lost.
func (h *Home) EditJSON(rel string, edit func(doc map[string]any) bool) error {
	if err := h.dir(path.Dir(rel)); err != nil {
		return err
	}
	doc, nlink, err := h.readJSON(rel)
	if err != nil || doc == nil {
		return err
	}
	if !edit(doc) {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("preparing the sandbox HOME: encoding %s: %w", h.root.Join(rel), err)
	}
	if nlink > 1 {
		h.warn(fmt.Sprintf("sandbox HOME: %s had %d names (a hard link); stockade wrote it as a new file, and the other names keep what they held",
			h.root.Join(rel), nlink))
	}
	if err := h.root.WriteFile(rel, b.Bytes(), 0o600); err != nil {
		return h.fail("preparing the sandbox HOME", err)
	}
	return nil
}

// readJSON reads the object in rel and its link count; a nil object, with
// no error, means rel is to be left alone (the warning is given).
func (h *Home) readJSON(rel string) (map[string]any, uint64, error) {
	leave := func(why string) (map[string]any, uint64, error) {
		h.warn(fmt.Sprintf("sandbox HOME: %s %s; stockade left it as it is, so the agent may ask its start-up questions", h.root.Join(rel), why))
		return nil, 0, nil
	}
	// O_NONBLOCK: a FIFO planted there must not hang the start.
	f, err := h.root.OpenFile(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return map[string]any{}, 0, nil
	case beneath.IsLoop(err):
		return leave("is a symlink")
	case err != nil:
		return nil, 0, h.fail("preparing the sandbox HOME", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, 0, h.fail("preparing the sandbox HOME", os.NewSyscallError("fstat", err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return leave("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJSON+1))
	if err != nil {
		return nil, 0, h.fail("preparing the sandbox HOME", err)
	}
	if len(data) > maxJSON {
		return leave(fmt.Sprintf("is larger than %d MiB", maxJSON>>20))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, uint64(st.Nlink), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers come back as they were written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil || dec.More() {
		return leave("does not hold a JSON object")
	}
	return doc, uint64(st.Nlink), nil
}
