package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// Head is the anchor of a log: the seq and hash of its last line as the
// writer last recorded them. Seq 0 (with Hash 64 zeros) is an empty log.
type Head struct {
	Session string `json:"session"`
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
}

// HeadPath is where the writer of the log at path keeps its head.
func HeadPath(path string) string { return path + ".head" }

// encode returns the head's file content. Its length never shrinks while
// seq grows (session and hash have fixed lengths), which is what lets the
// writer overwrite it in place without truncating.
func (h Head) encode() []byte {
	b := []byte(`{"v":1,"session":`)
	b = strconv.AppendQuote(b, h.Session)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, h.Seq, 10)
	return append(b, `,"hash":"`+h.Hash+"\"}\n"...)
}

// ReadHead reads the head file at path (see HeadPath). A missing file is an
// error satisfying errors.Is(err, fs.ErrNotExist).
func ReadHead(path string) (*Head, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit head: %w", err)
	}
	var h struct {
		V int `json:"v"`
		Head
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("reading audit head %s: %w", path, err)
	}
	if h.V != Version || !isSessionID(h.Session) || !isHex(h.Hash) || h.Seq == 0 && h.Hash != zeroHash {
		return nil, fmt.Errorf("reading audit head %s: not a version %d head", path, Version)
	}
	return &h.Head, nil
}

// writeHeadFile replaces the head file atomically (a new file renamed over
// it), so a crash leaves the old head or the new one, never a mix.
func writeHeadFile(path string, h Head, sync bool) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale %s: %w", tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("creating audit head: %w", err)
	}
	_, err = f.Write(h.encode())
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing audit head %s: %w", path, err)
	}
	return nil
}
