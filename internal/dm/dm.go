// Package dm drives the kernel's device-mapper through its ioctls on
// /dev/mapper/control, without libdevmapper, dmsetup or cryptsetup: a
// node has no userspace tools and no udev. It creates mappings (create,
// load a table, resume), removes them, and reports their status and
// tables; CryptTarget and OpenLUKS2 build dm-crypt mappings.
//
// Key material reaches the kernel only in []byte buffers that are zeroed
// once the ioctl returns; tables read back have crypt keys masked, as
// dmsetup table does without --showkeys.
//
// Each call opens the control node and closes it again, so callers hold
// no state, like the dmsetup CLI.
package dm

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors callers test with errors.Is; they are always wrapped with the
// operation and the device name.
var (
	// ErrNoDeviceMapper: the control node is missing and dm_mod is not
	// loaded (or the kernel has no device-mapper at all).
	ErrNoDeviceMapper = errors.New("device-mapper is not available")
	// ErrNotFound: no mapping has this name.
	ErrNotFound = errors.New("no such device-mapper device")
	// ErrExists: a mapping with this name or uuid exists already.
	ErrExists = errors.New("device-mapper device exists")
	// ErrBusy: the mapping is open (mounted, or held by a process).
	ErrBusy = errors.New("device-mapper device is busy")
)

// Sector is the unit of every start, length and offset in a table.
const Sector = 512

// Flags change how Create maps a device.
type Flags uint32

// ReadOnly maps the device read-only (dmsetup --readonly).
const ReadOnly Flags = unix.DM_READONLY_FLAG

// Target is one line of a table: Length sectors from Start map to a
// target of Type with Params, the rest of the line.
type Target struct {
	Start, Length uint64 // in 512-byte sectors
	Type          string // "crypt", "linear", ...
	Params        []byte
	// Secret says Params hold key material: Create loads it with
	// DM_SECURE_DATA_FLAG (the kernel wipes its copies) and zeroes
	// Params afterwards, so a secret Target serves one Create.
	Secret bool

	// err is an invalid argument found while building the target, held
	// for Create so that builders stay single-valued.
	err error
}

// Wipe zeroes the parameters of a secret target that is not passed to
// Create.
func (t Target) Wipe() {
	if t.Secret {
		clear(t.Params)
	}
}

// String describes the target without its parameters when they are
// secret, so that a logged Target never shows a key.
func (t Target) String() string {
	if t.Secret {
		return fmt.Sprintf("%d %d %s <secret>", t.Start, t.Length, t.Type)
	}

	return fmt.Sprintf("%d %d %s %s", t.Start, t.Length, t.Type, t.Params)
}

// GoString is String, for %#v.
func (t Target) GoString() string { return "dm.Target{" + t.String() + "}" }

// Device is a mapping and its block device node.
type Device struct {
	Name, UUID   string
	Major, Minor uint32
	// Path is /dev/mapper/<name>.
	Path string
}

// Info is what Status reports about a mapping.
type Info struct {
	Name, UUID   string
	Major, Minor uint32
	OpenCount    int // opens of the block device (mounts, file handles)
	TargetCount  int // targets of the active table
	EventNr      uint32
	Suspended    bool
	ReadOnly     bool
	// ActiveTable and InactiveTable: a table is live, or loaded and
	// waiting for a resume.
	ActiveTable, InactiveTable bool
	// DeferredRemove: the mapping goes away at its last close.
	DeferredRemove bool
	// Targets are the active table's targets with their status lines.
	Targets []TargetStatus
}

// TargetStatus is a target as the kernel reports it: its status line
// (Status) or its table line (Table).
type TargetStatus struct {
	Start, Length uint64
	Type          string
	Params        string
}

// Version returns the kernel's device-mapper ioctl interface version.
func Version() ([3]uint32, error) {
	c, err := sys.openControl()
	if err != nil {
		return [3]uint32{}, err
	}
	defer c.Close()

	buf := newBuffer(ioctlSize, "", "", 0)
	if err := c.ioctl(unix.DM_VERSION, buf); err != nil {
		return [3]uint32{}, fmt.Errorf("dm: version: %w", err)
	}

	h, err := parseHeader(buf)

	return h.Version, err
}

// Create makes the mapping name (with uuid, which may be empty) from
// targets and makes it live: create, load the table, resume, then make
// /dev/mapper/<name>. On any failure the mapping is removed again. The
// parameters of secret targets are zeroed before Create returns.
func Create(name, uuid string, targets []Target, flags Flags) (d Device, err error) {
	defer func() {
		for _, t := range targets {
			t.Wipe()
		}
	}()

	if err := checkName(name); err != nil {
		return Device{}, err
	}

	if err := checkUUID(uuid); err != nil {
		return Device{}, err
	}

	if err := checkTargets(targets); err != nil {
		return Device{}, fmt.Errorf("dm: create %q: %w", name, err)
	}

	c, err := sys.openControl()
	if err != nil {
		return Device{}, err
	}
	defer c.Close()

	buf := newBuffer(ioctlSize, name, uuid, 0)
	if err := c.ioctl(unix.DM_DEV_CREATE, buf); err != nil {
		if errors.Is(err, unix.EBUSY) {
			err = fmt.Errorf("%w (%w)", ErrExists, err)
		}

		return Device{}, fmt.Errorf("dm: create %q: %w", name, err)
	}

	h, err := parseHeader(buf)
	if err != nil {
		return Device{}, errors.Join(err, removeNow(c, name))
	}

	d = Device{Name: name, UUID: uuid, Major: unix.Major(h.Dev), Minor: unix.Minor(h.Dev)}

	if err := load(c, name, targets, flags); err != nil {
		return Device{}, errors.Join(err, removeNow(c, name))
	}

	// DM_DEV_SUSPEND without DM_SUSPEND_FLAG resumes: the loaded
	// table becomes the live one.
	if err := c.ioctl(unix.DM_DEV_SUSPEND, newBuffer(ioctlSize, name, "", 0)); err != nil {
		return Device{}, errors.Join(fmt.Errorf("dm: resume %q: %w", name, err), removeNow(c, name))
	}

	if d.Path, err = ensureNode(sys.dev, name, d.Major, d.Minor); err != nil {
		return Device{}, errors.Join(fmt.Errorf("dm: create %q: %w", name, err), removeNow(c, name))
	}

	return d, nil
}

// load loads the table into the mapping's inactive slot. The buffer is
// zeroed after the ioctl whatever happened, as it holds any keys.
func load(c controller, name string, targets []Target, flags Flags) error {
	f := uint32(flags & ReadOnly)

	for _, t := range targets {
		if t.Secret {
			f |= unix.DM_SECURE_DATA_FLAG
		}
	}

	buf := newBuffer(loadSize(targets), name, "", f)
	defer clear(buf)

	ne.PutUint32(buf[offTargetCount:], uint32(len(targets)))
	putTargets(buf, targets)

	if err := c.ioctl(unix.DM_TABLE_LOAD, buf); err != nil {
		// The kernel logs why a table is refused; the errno alone
		// rarely says (EINVAL for a bad line, ENOENT for a target type
		// whose module is not loaded).
		return fmt.Errorf("dm: load table of %q (types %s): %w (see the kernel log)", name, typeNames(targets), err)
	}

	return nil
}

// removeNow removes a mapping Create made, once, for cleanup.
func removeNow(c controller, name string) error {
	if err := c.ioctl(unix.DM_DEV_REMOVE, newBuffer(ioctlSize, name, "", 0)); err != nil {
		return fmt.Errorf("dm: remove %q after the failure: %w", name, err)
	}

	return nil
}

// Status reports the mapping and its active table's status lines.
func Status(name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}

	c, err := sys.openControl()
	if err != nil {
		return Info{}, err
	}
	defer c.Close()

	info, _, err := tableStatus(c, name, false)

	return info, err
}

// Table returns the active table's lines, crypt keys masked with zeroes.
func Table(name string) ([]TargetStatus, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}

	c, err := sys.openControl()
	if err != nil {
		return nil, err
	}
	defer c.Close()

	info, _, err := tableStatus(c, name, true)

	return info.Targets, err
}

// tableStatus runs DM_TABLE_STATUS for status lines or, with table set,
// table lines. A table reply can hold a crypt key in the clear: it is
// asked for with DM_SECURE_DATA_FLAG and its buffer is zeroed here.
func tableStatus(c controller, name string, table bool) (Info, header, error) {
	var flags uint32
	if table {
		flags = unix.DM_STATUS_TABLE_FLAG | unix.DM_SECURE_DATA_FLAG
	}

	buf, h, err := query(c, unix.DM_TABLE_STATUS, name, flags, 16<<10, table)
	if table {
		defer clear(buf)
	}

	if err != nil {
		return Info{}, h, opError("status", name, err)
	}

	info := infoOf(h)

	raw, err := parseTargets(buf, h)
	if err != nil {
		return info, h, fmt.Errorf("dm: status %q: %w", name, err)
	}

	for _, r := range raw {
		p := r.Params
		if table && r.Type == "crypt" {
			p = maskCryptKey(p)
		}

		info.Targets = append(info.Targets, TargetStatus{Start: r.Start, Length: r.Length, Type: r.Type, Params: string(p)})
	}

	return info, h, nil
}

func infoOf(h header) Info {
	return Info{
		Name: h.Name, UUID: h.UUID, Major: unix.Major(h.Dev), Minor: unix.Minor(h.Dev),
		OpenCount: int(h.OpenCount), TargetCount: int(h.TargetCount), EventNr: h.EventNr,
		Suspended:      h.Flags&unix.DM_SUSPEND_FLAG != 0,
		ReadOnly:       h.Flags&unix.DM_READONLY_FLAG != 0,
		ActiveTable:    h.Flags&unix.DM_ACTIVE_PRESENT_FLAG != 0,
		InactiveTable:  h.Flags&unix.DM_INACTIVE_PRESENT_FLAG != 0,
		DeferredRemove: h.Flags&unix.DM_DEFERRED_REMOVE != 0,
	}
}

// List returns every mapping, with its uuid on kernels that report it
// (Linux 5.14 and later). Path is filled in as the node's conventional
// place; it exists for mappings this package created.
func List() ([]Device, error) {
	c, err := sys.openControl()
	if err != nil {
		return nil, err
	}
	defer c.Close()

	buf, h, err := query(c, unix.DM_LIST_DEVICES, "", unix.DM_UUID_FLAG, 16<<10, false)
	if err != nil {
		return nil, fmt.Errorf("dm: list: %w", err)
	}

	devs, err := parseNameList(buf, h)
	if err != nil {
		return nil, fmt.Errorf("dm: list: %w", err)
	}

	for i := range devs {
		devs[i].Path = filepath.Join(sys.dev, unix.DM_DIR, devs[i].Name)
	}

	return devs, nil
}

// opError wraps a kernel error for operation op on name, mapping ENXIO
// (the kernel's "no such mapping") to ErrNotFound.
func opError(op, name string, err error) error {
	if errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("dm: %s %q: %w (%w)", op, name, ErrNotFound, err)
	}

	return fmt.Errorf("dm: %s %q: %w", op, name, err)
}

// checkName applies the kernel's rules for a mapping name, so that a bad
// one fails with a clear message instead of EINVAL.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("dm: empty device name")
	case len(name) >= nameLen:
		return fmt.Errorf("dm: device name of %d bytes, the kernel allows %d", len(name), nameLen-1)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("dm: device name %q contains / or NUL", name)
	case name == "." || name == ".." || name == unix.DM_CONTROL_NODE:
		return fmt.Errorf("dm: device name %q is reserved", name)
	}

	return nil
}

func checkUUID(uuid string) error {
	switch {
	case len(uuid) >= uuidLen:
		return fmt.Errorf("dm: uuid of %d bytes, the kernel allows %d", len(uuid), uuidLen-1)
	case strings.ContainsRune(uuid, 0):
		return errors.New("dm: uuid contains NUL")
	}

	return nil
}

func checkTargets(targets []Target) error {
	if len(targets) == 0 {
		return errors.New("no targets")
	}

	next := uint64(0)

	for i, t := range targets {
		switch {
		case t.err != nil:
			return fmt.Errorf("target %d: %w", i, t.err)
		case t.Type == "" || len(t.Type) >= typeNameLen || strings.ContainsRune(t.Type, 0):
			return fmt.Errorf("target %d: type %q (1 to %d bytes)", i, t.Type, typeNameLen-1)
		case t.Length == 0:
			return fmt.Errorf("target %d (%s): zero length", i, t.Type)
		case t.Start != next:
			// The kernel refuses gaps and overlaps; say which.
			return fmt.Errorf("target %d (%s) starts at sector %d, the table so far ends at %d", i, t.Type, t.Start, next)
		case bytes.IndexByte(t.Params, 0) >= 0:
			return fmt.Errorf("target %d (%s): parameters contain NUL", i, t.Type)
		}

		next = t.Start + t.Length
	}

	return nil
}

func typeNames(targets []Target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Type
	}

	return strings.Join(names, ",")
}
