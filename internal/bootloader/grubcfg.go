package bootloader

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The labels of the two install slots, and the directories on BOOT that
// hold them.
const (
	LabelA = "A"
	LabelB = "B"
)

// Files of a slot, relative to BOOT's root (Talos's names: the initramfs
// keeps the .xz name whatever its compression).
const (
	KernelName    = "vmlinuz"
	InitramfsName = "initramfs.xz"
	ConfigPath    = "grub/grub.cfg"
)

// DefaultTimeout is Talos's menu timeout in seconds.
const DefaultTimeout = 3

// Entry is one bootable slot.
type Entry struct {
	Label   string // A or B
	Version string // the version the slot holds, e.g. v0.1.0
	Cmdline string
}

// Name is the menu entry's title, as Talos writes it: "A - Talos (v1.11.0)".
func (e Entry) Name() string { return fmt.Sprintf("%s - talosbox (%s)", e.Label, e.Version) }

// Config is grub.cfg: the slot that boots, the one GRUB falls back to when
// the default's kernel cannot be loaded, and the entries.
type Config struct {
	Default  string // a label
	Fallback string // a label, or "" when there is only one slot
	Timeout  int
	// Serial sends GRUB's menu to the first serial port as well, for
	// machines whose console is ttyS0 (the kernel's console= says so).
	Serial  bool
	Entries []Entry // sorted by label
}

// Entry returns the entry with label l.
func (c *Config) Entry(l string) (Entry, bool) {
	i := slices.IndexFunc(c.Entries, func(e Entry) bool { return e.Label == l })
	if i < 0 {
		return Entry{}, false
	}

	return c.Entries[i], true
}

// Other is the slot that is not l.
func Other(l string) string {
	if l == LabelA {
		return LabelB
	}

	return LabelA
}

// Put installs e as the new default and keeps the previous default as the
// fallback; an entry left over in e's slot is replaced.
func (c *Config) Put(e Entry) {
	prev := c.Default
	c.Entries = slices.DeleteFunc(c.Entries, func(x Entry) bool { return x.Label == e.Label })
	c.Entries = append(c.Entries, e)
	slices.SortFunc(c.Entries, func(a, b Entry) int { return strings.Compare(a.Label, b.Label) })
	c.Default, c.Fallback = e.Label, ""

	if prev != "" && prev != e.Label {
		c.Fallback = prev
	}
}

// ErrNoFallback is Revert's answer when there is nothing to go back to.
var ErrNoFallback = errors.New("no previous installation to go back to")

// Revert makes the fallback the default again, returning its label. The
// reverted-from entry stays, as the new fallback.
func (c *Config) Revert() (string, error) {
	if c.Fallback == "" {
		return "", ErrNoFallback
	}

	if _, ok := c.Entry(c.Fallback); !ok {
		return "", fmt.Errorf("cannot roll back to %s: label does not exist", c.Fallback)
	}

	c.Default, c.Fallback = c.Fallback, c.Default

	return c.Default, nil
}

// Render writes grub.cfg.
func (c *Config) Render() ([]byte, error) {
	def, ok := c.Entry(c.Default)
	if !ok {
		return nil, fmt.Errorf("grub.cfg: the default %q has no entry", c.Default)
	}

	var b bytes.Buffer

	fmt.Fprintf(&b, "set default=%q\n", def.Name())

	if c.Fallback != "" {
		fb, ok := c.Entry(c.Fallback)
		if !ok {
			return nil, fmt.Errorf("grub.cfg: the fallback %q has no entry", c.Fallback)
		}

		fmt.Fprintf(&b, "set fallback=%q\n", fb.Name())
	}

	fmt.Fprintf(&b, "\nset timeout=%d\n\n", c.Timeout)

	terminal := "console"
	if c.Serial {
		b.WriteString("serial --unit=0 --speed=115200\n")

		terminal = "serial console"
	}

	fmt.Fprintf(&b, "terminal_input %s\nterminal_output %s\n", terminal, terminal)

	for _, e := range c.Entries {
		if err := CheckCmdline(e.Cmdline); err != nil {
			return nil, fmt.Errorf("grub.cfg: entry %s: %w", e.Label, err)
		}

		if strings.ContainsAny(e.Version, "\n\"") {
			return nil, fmt.Errorf("grub.cfg: entry %s: a newline or a double quote cannot be written", e.Label)
		}

		fmt.Fprintf(&b, "\nmenuentry %q {\n  set gfxmode=auto\n  set gfxpayload=text\n  linux /%s/%s %s\n  initrd /%s/%s\n}\n",
			e.Name(), e.Label, KernelName, e.Cmdline, e.Label, InitramfsName)
	}

	return b.Bytes(), nil
}

// Parse reads a grub.cfg Render wrote.
func Parse(data []byte) (*Config, error) {
	c := &Config{Timeout: DefaultTimeout}

	var defName, fbName string

	var cur *Entry

	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())

		var err error

		switch {
		case strings.HasPrefix(line, "set default="):
			defName, err = strconv.Unquote(strings.TrimPrefix(line, "set default="))
		case strings.HasPrefix(line, "set fallback="):
			fbName, err = strconv.Unquote(strings.TrimPrefix(line, "set fallback="))
		case strings.HasPrefix(line, "set timeout="):
			c.Timeout, err = strconv.Atoi(strings.TrimPrefix(line, "set timeout="))
		case strings.HasPrefix(line, "serial "):
			c.Serial = true
		case strings.HasPrefix(line, "menuentry "):
			var name string

			name, err = strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "menuentry "), " {"))
			if err == nil {
				cur = &Entry{}
				cur.Label, cur.Version, err = splitName(name)
			}
		case strings.HasPrefix(line, "linux ") && cur != nil:
			f := strings.SplitN(strings.TrimPrefix(line, "linux "), " ", 2)
			if len(f) == 2 {
				cur.Cmdline = f[1]
			}
		case line == "}" && cur != nil:
			c.Entries = append(c.Entries, *cur)
			cur = nil
		}

		if err != nil {
			return nil, fmt.Errorf("grub.cfg: line %d: %q: %w", n, line, err)
		}
	}

	for _, e := range c.Entries {
		switch e.Name() {
		case defName:
			c.Default = e.Label
		case fbName:
			c.Fallback = e.Label
		}
	}

	if c.Default == "" {
		return nil, fmt.Errorf("grub.cfg: no entry is the default %q", defName)
	}

	slices.SortFunc(c.Entries, func(a, b Entry) int { return strings.Compare(a.Label, b.Label) })

	return c, nil
}

// splitName takes "A - talosbox (v1)" apart.
func splitName(name string) (label, version string, err error) {
	label, rest, ok := strings.Cut(name, " - talosbox (")
	if !ok || !strings.HasSuffix(rest, ")") || (label != LabelA && label != LabelB) {
		return "", "", fmt.Errorf("not a talosbox entry")
	}

	return label, strings.TrimSuffix(rest, ")"), nil
}

// cmdlineSpecial are the characters GRUB's script lexer gives a meaning on
// a linux line (quoting, variables, command separators, blocks, comments):
// written there, an argument would reach the kernel changed, or break the
// whole grub.cfg.
const cmdlineSpecial = "\"'\\$;|&<>{}#\n\r\t\x00"

// CheckCmdline refuses a kernel command line (or one argument of it) that
// grub.cfg cannot carry as written. Config validation calls it for each of
// machine.install.extraKernelArgs, so an install or upgrade never fails on
// one after the config was accepted.
func CheckCmdline(s string) error {
	if i := strings.IndexAny(s, cmdlineSpecial); i >= 0 {
		return fmt.Errorf("a kernel argument cannot hold %q: the boot loader's config (grub.cfg) could not carry it", s[i:i+1])
	}

	return nil
}
