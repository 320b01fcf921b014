package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// sumDB is a checksum database in the protocol of sum.golang.org
// (go.dev/design/25530-sumdb, golang.org/x/mod/sumdb) that holds one
// record: a transparent log of size 1, whose tree hash is the record's
// hash, signed with an Ed25519 key made at start. Written here with the
// standard library, as the rest of the server is, rather than with
// golang.org/x/mod/sumdb, which the module does not require.
type sumDB struct {
	vkey   string // the verifier key, as GOSUMDB takes it: name+hash+key
	lookup []byte // the answer to /lookup/M@V: record id, record, signed tree
	tile   []byte // tile 8/0/000.p/1: the hash at level 0, the record's
}

func newSumDB(name, record string) (*sumDB, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	// note.NewVerifier's format: the key is an algorithm byte (1:
	// Ed25519) and the public key; its hash is the first 4 bytes of
	// SHA-256(name "\n" key), which every signature line starts with.
	key := append([]byte{1}, pub...)
	sum := sha256.Sum256(append([]byte(name+"\n"), key...))
	keyHash := sum[:4]
	vkey := fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(keyHash), base64.StdEncoding.EncodeToString(key))

	// tlog.RecordHash: SHA-256 of a 0 byte and the record. A tree of one
	// record has that hash as its own.
	leaf := sha256.Sum256(append([]byte{0}, record...))
	tree := fmt.Sprintf("go.sum database tree\n1\n%s\n", base64.StdEncoding.EncodeToString(leaf[:]))
	sig := append(append([]byte{}, keyHash...), ed25519.Sign(priv, []byte(tree))...)
	signed := tree + "\n\u2014 " + name + " " + base64.StdEncoding.EncodeToString(sig) + "\n"
	return &sumDB{
		vkey:   vkey,
		lookup: []byte("0\n" + record + "\n" + signed), // tlog.FormatRecord, then the note
		tile:   leaf[:],
	}, nil
}
