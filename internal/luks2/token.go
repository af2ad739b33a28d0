package luks2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Tokens are free-form JSON objects (0–31) that LUKS2 stores for tools:
// Talos keeps its KMS and TPM sealed keys there, in a token whose id equals
// the keyslot, e.g. {"type":"sideroKMS","keyslots":[],"UserData":{...}}.
// LUKS2 requires only a string "type" and a "keyslots" array naming
// existing keyslots (as strings); everything else is the tool's.

// Tokens returns the tokens by id. A missing id means no token.
func Tokens(dev io.ReaderAt) (map[int]json.RawMessage, error) {
	h, err := ReadHeader(dev)
	if err != nil {
		return nil, err
	}
	return h.Tokens(), nil
}

// Tokens returns a copy of the header's tokens.
func (h *Header) Tokens() map[int]json.RawMessage {
	out := make(map[int]json.RawMessage, len(h.md.Tokens))
	for id, t := range h.md.Tokens {
		out[id] = bytes.Clone(t)
	}
	return out
}

// SetToken stores token under id, replacing any token there, like
// cryptsetup token import --token-id id --token-replace.
func SetToken(dev Device, id int, token []byte) error {
	h, err := ReadHeader(dev)
	if err != nil {
		return err
	}
	if err := h.writable(); err != nil {
		return err
	}
	if id < 0 || id >= MaxSlots {
		return fmt.Errorf("luks2: token %d: out of range 0-%d", id, MaxSlots-1)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, token); err != nil {
		return fmt.Errorf("luks2: token %d: %w", id, err)
	}
	if err := h.md.validateToken(buf.Bytes()); err != nil {
		return fmt.Errorf("luks2: token %d: %w", id, err)
	}
	h.md.Tokens[id] = buf.Bytes()
	return h.write(dev)
}

// RemoveToken deletes token id; ErrNoSlot if there is none.
func RemoveToken(dev Device, id int) error {
	h, err := ReadHeader(dev)
	if err != nil {
		return err
	}
	if err := h.writable(); err != nil {
		return err
	}
	if _, ok := h.md.Tokens[id]; !ok {
		return fmt.Errorf("luks2: token %d: %w", id, ErrNoSlot)
	}
	delete(h.md.Tokens, id)
	return h.write(dev)
}

func (md *metadata) validateToken(raw []byte) error {
	var t struct {
		Type     *string   `json:"type"`
		Keyslots *[]string `json:"keyslots"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("not a token object: %w", err)
	}
	if t.Type == nil || *t.Type == "" {
		return fmt.Errorf("token has no type")
	}
	if t.Keyslots == nil {
		return fmt.Errorf("token has no keyslots array")
	}
	if err := checkRefs(*t.Keyslots, func(i int) bool { return md.Keyslots[i] != nil }); err != nil {
		return fmt.Errorf("keyslots: %w", err)
	}
	return nil
}

// unassignToken drops keyslot id from a token's keyslots, leaving every
// other member as it was.
func unassignToken(raw json.RawMessage, id int) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	var refs []string
	if err := json.Unmarshal(obj["keyslots"], &refs); err != nil {
		return nil, err
	}
	if !hasRef(refs, id) {
		return raw, nil
	}
	b, err := marshalPlain(unassign(refs, id))
	if err != nil {
		return nil, err
	}
	obj["keyslots"] = b
	return marshalPlain(obj)
}
