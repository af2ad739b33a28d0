package luks2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// The JSON metadata as LUKS2 defines it. Objects this package rewrites keep
// the members it does not model (extras), so a header written by a newer
// cryptsetup loses nothing when we add or remove a keyslot.
type metadata struct {
	Keyslots map[int]*keyslot        `json:"keyslots"`
	Tokens   map[int]json.RawMessage `json:"tokens"`
	Segments map[int]*segment        `json:"segments"`
	Digests  map[int]*digest         `json:"digests"`
	Config   config                  `json:"config"`
}

type keyslot struct {
	Type     string `json:"type"`
	KeySize  int    `json:"key_size"`
	AF       af     `json:"af"`
	Area     area   `json:"area"`
	KDF      kdf    `json:"kdf"`
	Priority *int   `json:"priority,omitempty"`
	Extra    extras `json:"-"`
}

type af struct {
	Type    string `json:"type"`
	Stripes int    `json:"stripes"`
	Hash    string `json:"hash"`
}

type area struct {
	Type       string  `json:"type"`
	Offset     jsonU64 `json:"offset"`
	Size       jsonU64 `json:"size"`
	Encryption string  `json:"encryption"`
	KeySize    int     `json:"key_size"`
}

type kdf struct {
	Type       string `json:"type"`
	Hash       string `json:"hash,omitempty"`
	Iterations uint32 `json:"iterations,omitempty"`
	Time       uint32 `json:"time,omitempty"`
	Memory     uint32 `json:"memory,omitempty"`
	CPUs       uint32 `json:"cpus,omitempty"`
	Salt       []byte `json:"salt"`
}

type segment struct {
	Type       string   `json:"type"`
	Offset     jsonU64  `json:"offset"`
	Size       segSize  `json:"size"`
	IVTweak    *jsonU64 `json:"iv_tweak,omitempty"`
	Encryption string   `json:"encryption,omitempty"`
	SectorSize int      `json:"sector_size,omitempty"`
	Extra      extras   `json:"-"`
}

type digest struct {
	Type       string   `json:"type"`
	Keyslots   []string `json:"keyslots"`
	Segments   []string `json:"segments"`
	Hash       string   `json:"hash"`
	Iterations int      `json:"iterations"`
	Salt       []byte   `json:"salt"`
	Digest     []byte   `json:"digest"`
	Extra      extras   `json:"-"`
}

type config struct {
	JSONSize     jsonU64 `json:"json_size"`
	KeyslotsSize jsonU64 `json:"keyslots_size"`
	Extra        extras  `json:"-"`
}

// Limits that keep a hostile header from making us allocate or compute
// without bound. They match or exceed what cryptsetup itself writes.
const (
	maxKeyslotsSize = 128 << 20
	maxKeyBytes     = 512
	maxSaltBytes    = 1024
)

func parseMetadata(js []byte, hdrSize uint64) (*metadata, error) {
	md := &metadata{}
	if err := json.Unmarshal(js, md); err != nil {
		return nil, fmt.Errorf("JSON metadata: %w", err)
	}
	if err := md.validate(hdrSize); err != nil {
		return nil, fmt.Errorf("JSON metadata: %w", err)
	}
	return md, nil
}

func (md *metadata) marshal() ([]byte, error) { return marshalPlain(md) }

// marshalPlain is json.Marshal without HTML escaping, which cryptsetup
// does not do either, so that tokens holding '<', '>' or '&' are stored
// as given.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// validate checks the structure cryptsetup insists on, so that what we
// accept cryptsetup accepts too, and bounds every size we later act on.
func (md *metadata) validate(hdrSize uint64) error {
	if md.Keyslots == nil || md.Tokens == nil || md.Segments == nil || md.Digests == nil {
		return fmt.Errorf("missing keyslots, tokens, segments or digests")
	}
	if uint64(md.Config.JSONSize) != hdrSize-binHeaderSize {
		return fmt.Errorf("config json_size %d does not match hdr_size %d", md.Config.JSONSize, hdrSize)
	}
	ks := uint64(md.Config.KeyslotsSize)
	if ks%4096 != 0 || ks > maxKeyslotsSize {
		return fmt.Errorf("config keyslots_size %d", ks)
	}
	areaStart, areaEnd := 2*hdrSize, 2*hdrSize+ks
	type span struct{ lo, hi uint64 }
	var used []span
	for id, k := range md.Keyslots {
		if id < 0 || id >= MaxSlots || k == nil {
			return fmt.Errorf("keyslot %d: bad id", id)
		}
		if k.Type == "" {
			return fmt.Errorf("keyslot %d: no type", id)
		}
		if k.Type != "luks2" {
			continue // kept as found; unlock skips it
		}
		if k.KeySize <= 0 || k.KeySize > maxKeyBytes || k.Area.KeySize <= 0 || k.Area.KeySize > maxKeyBytes {
			return fmt.Errorf("keyslot %d: key size", id)
		}
		if k.AF.Type != "luks1" || k.AF.Stripes <= 0 || k.AF.Stripes > 1<<20 || k.AF.Hash == "" {
			return fmt.Errorf("keyslot %d: af", id)
		}
		lo, n := uint64(k.Area.Offset), uint64(k.Area.Size)
		if k.Area.Type != "raw" || lo < areaStart || n > areaEnd || lo > areaEnd-n {
			return fmt.Errorf("keyslot %d: area [%d,+%d) outside the keyslots area [%d,%d)", id, lo, n, areaStart, areaEnd)
		}
		if uint64(k.KeySize)*uint64(k.AF.Stripes) > n {
			return fmt.Errorf("keyslot %d: area smaller than the split key", id)
		}
		for _, s := range used {
			if lo < s.hi && s.lo < lo+n {
				return fmt.Errorf("keyslot %d: area overlaps another keyslot", id)
			}
		}
		used = append(used, span{lo, lo + n})
		if k.Priority != nil && (*k.Priority < 0 || *k.Priority > 2) {
			return fmt.Errorf("keyslot %d: priority %d", id, *k.Priority)
		}
		if err := k.KDF.validate(); err != nil {
			return fmt.Errorf("keyslot %d: kdf: %w", id, err)
		}
	}
	for id, s := range md.Segments {
		if id < 0 || s == nil || s.Type == "" {
			return fmt.Errorf("segment %d: bad id or type", id)
		}
		if s.Type == "crypt" {
			if s.Encryption == "" || s.IVTweak == nil {
				return fmt.Errorf("segment %d: encryption or iv_tweak missing", id)
			}
			switch s.SectorSize {
			case 512, 1024, 2048, 4096:
			default:
				return fmt.Errorf("segment %d: sector_size %d", id, s.SectorSize)
			}
		}
	}
	for id, d := range md.Digests {
		if id < 0 || d == nil || d.Type == "" {
			return fmt.Errorf("digest %d: bad id or type", id)
		}
		if err := checkRefs(d.Keyslots, func(i int) bool { return md.Keyslots[i] != nil }); err != nil {
			return fmt.Errorf("digest %d: keyslots: %w", id, err)
		}
		if err := checkRefs(d.Segments, func(i int) bool { return md.Segments[i] != nil }); err != nil {
			return fmt.Errorf("digest %d: segments: %w", id, err)
		}
		if d.Type == "pbkdf2" {
			if d.Hash == "" || d.Iterations <= 0 || len(d.Salt) == 0 || len(d.Salt) > maxSaltBytes ||
				len(d.Digest) == 0 || len(d.Digest) > 64 {
				return fmt.Errorf("digest %d: pbkdf2 parameters", id)
			}
		}
	}
	for id, t := range md.Tokens {
		if id < 0 || id >= MaxSlots {
			return fmt.Errorf("token %d: bad id", id)
		}
		if err := md.validateToken(t); err != nil {
			return fmt.Errorf("token %d: %w", id, err)
		}
	}
	return nil
}

func (k *kdf) validate() error {
	if len(k.Salt) == 0 || len(k.Salt) > maxSaltBytes {
		return fmt.Errorf("salt length %d", len(k.Salt))
	}
	switch k.Type {
	case KDFPBKDF2:
		if k.Hash == "" {
			return fmt.Errorf("pbkdf2 without hash")
		}
		if k.Iterations == 0 {
			return fmt.Errorf("pbkdf2 iterations 0")
		}
	case KDFArgon2i, KDFArgon2id:
		// 4 GiB is cryptsetup's ceiling; it also stops a crafted header
		// from asking for more memory than any machine has.
		if k.Time == 0 || k.Memory == 0 || k.Memory > 4<<20 || k.CPUs == 0 || k.CPUs > 255 {
			return fmt.Errorf("argon2 time %d memory %d cpus %d", k.Time, k.Memory, k.CPUs)
		}
	default:
		if k.Type == "" {
			return fmt.Errorf("no type")
		}
	}
	return nil
}

// checkRefs checks a list of decimal ids (LUKS2 stores references as
// strings) against what exists.
func checkRefs(refs []string, exists func(int) bool) error {
	if refs == nil {
		return fmt.Errorf("missing")
	}
	for _, r := range refs {
		i, err := parseID(r)
		if err != nil || !exists(i) {
			return fmt.Errorf("%q does not exist", r)
		}
	}
	return nil
}

func parseID(s string) (int, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad id %q", s)
	}
	return strconv.Atoi(s)
}

// jsonU64 is how LUKS2 stores 64-bit sizes and offsets: as decimal strings,
// because JSON numbers are not exact beyond 2^53.
type jsonU64 uint64

func (u jsonU64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(u), 10) + `"`), nil
}

func (u *jsonU64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a decimal string: %w", err)
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return fmt.Errorf("expected a decimal string, got %q", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return err
	}
	*u = jsonU64(n)
	return nil
}

// segSize is a segment length: bytes, or "dynamic" for up to the device end.
type segSize struct {
	Dynamic bool
	Bytes   uint64
}

func (s segSize) MarshalJSON() ([]byte, error) {
	if s.Dynamic {
		return []byte(`"dynamic"`), nil
	}
	return jsonU64(s.Bytes).MarshalJSON()
}

func (s *segSize) UnmarshalJSON(b []byte) error {
	if string(b) == `"dynamic"` {
		*s = segSize{Dynamic: true}
		return nil
	}
	var u jsonU64
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	*s = segSize{Bytes: uint64(u)}
	return nil
}

// extras holds JSON members that a struct does not model.
type extras map[string]json.RawMessage

// The plain* types have the same fields but no methods, so encoding/json
// does the field work without recursing into our Marshal/UnmarshalJSON.
type (
	plainKeyslot keyslot
	plainSegment segment
	plainDigest  digest
	plainConfig  config
)

func (k *keyslot) UnmarshalJSON(b []byte) (err error) {
	k.Extra, err = decodeWithExtras(b, (*plainKeyslot)(k))
	return err
}
func (k keyslot) MarshalJSON() ([]byte, error) { return encodeWithExtras(plainKeyslot(k), k.Extra) }

func (s *segment) UnmarshalJSON(b []byte) (err error) {
	s.Extra, err = decodeWithExtras(b, (*plainSegment)(s))
	return err
}
func (s segment) MarshalJSON() ([]byte, error) { return encodeWithExtras(plainSegment(s), s.Extra) }

func (d *digest) UnmarshalJSON(b []byte) (err error) {
	d.Extra, err = decodeWithExtras(b, (*plainDigest)(d))
	return err
}
func (d digest) MarshalJSON() ([]byte, error) { return encodeWithExtras(plainDigest(d), d.Extra) }

func (c *config) UnmarshalJSON(b []byte) (err error) {
	c.Extra, err = decodeWithExtras(b, (*plainConfig)(c))
	return err
}
func (c config) MarshalJSON() ([]byte, error) { return encodeWithExtras(plainConfig(c), c.Extra) }

// decodeWithExtras decodes b into the struct v points to and returns the
// members v has no field for.
func decodeWithExtras(b []byte, v any) (extras, error) {
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	t := reflect.TypeOf(v).Elem()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		for k := range all {
			// encoding/json matches names case-insensitively, so a member
			// it consumed may differ in case from the tag.
			if strings.EqualFold(k, name) {
				delete(all, k)
			}
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

func encodeWithExtras(v any, x extras) ([]byte, error) {
	b, err := marshalPlain(v)
	if err != nil || len(x) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, raw := range x {
		if _, ok := all[k]; !ok {
			all[k] = raw
		}
	}
	return marshalPlain(all)
}
