package bootloader

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestConfigFlipAndRevert(t *testing.T) {
	c := &Config{Timeout: DefaultTimeout, Serial: true}
	c.Put(Entry{Label: LabelA, Version: "v1", Cmdline: "console=ttyS0 talos.platform=metal"})

	if c.Default != LabelA || c.Fallback != "" {
		t.Fatalf("first install: default %q fallback %q", c.Default, c.Fallback)
	}

	if _, err := c.Revert(); !errors.Is(err, ErrNoFallback) {
		t.Fatalf("revert with one slot: %v", err)
	}

	c.Put(Entry{Label: Other(c.Default), Version: "v2", Cmdline: "console=ttyS0"})

	if c.Default != LabelB || c.Fallback != LabelA {
		t.Fatalf("upgrade: default %q fallback %q", c.Default, c.Fallback)
	}

	data, err := c.Render()
	if err != nil {
		t.Fatal(err)
	}

	want := `set default="B - talosbox (v2)"
set fallback="A - talosbox (v1)"

set timeout=3

serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console

menuentry "A - talosbox (v1)" {
  set gfxmode=auto
  set gfxpayload=text
  linux /A/vmlinuz console=ttyS0 talos.platform=metal
  initrd /A/initramfs.xz
}

menuentry "B - talosbox (v2)" {
  set gfxmode=auto
  set gfxpayload=text
  linux /B/vmlinuz console=ttyS0
  initrd /B/initramfs.xz
}
`
	if string(data) != want {
		t.Fatalf("grub.cfg:\n%s\nwant:\n%s", data, want)
	}

	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}

	if back.Default != LabelB || back.Fallback != LabelA || !back.Serial || back.Timeout != 3 || len(back.Entries) != 2 ||
		back.Entries[0] != c.Entries[0] || back.Entries[1] != c.Entries[1] {
		t.Fatalf("parsed back: %+v, want %+v", back, c)
	}

	l, err := back.Revert()
	if err != nil || l != LabelA || back.Default != LabelA || back.Fallback != LabelB {
		t.Fatalf("revert: %q %v, default %q fallback %q", l, err, back.Default, back.Fallback)
	}

	// A third version replaces the fallback's slot, never the running one.
	back.Put(Entry{Label: Other(back.Default), Version: "v3"})

	if e, _ := back.Entry(LabelB); e.Version != "v3" || back.Default != LabelB || back.Fallback != LabelA {
		t.Fatalf("v3: %+v", back)
	}
}

func TestParseRefusesForeignConfigs(t *testing.T) {
	for name, cfg := range map[string]string{
		"no default entry": "set default=\"A - talosbox (v1)\"\n",
		"foreign entry":    "set default=\"Debian\"\nmenuentry \"Debian\" {\n}\n",
		"bad quoting":      "set default=A - talosbox\n",
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := Parse([]byte(cfg)); err == nil {
				t.Fatalf("parsed %+v", c)
			}
		})
	}
}

func TestRenderRefusesQuotes(t *testing.T) {
	c := &Config{}
	c.Put(Entry{Label: LabelA, Version: "v1", Cmdline: `a="b"`})

	if _, err := c.Render(); err == nil || !strings.Contains(err.Error(), `cannot hold "\""`) {
		t.Fatalf("a quote in the command line: %v", err)
	}
}

func TestCheckCmdline(t *testing.T) {
	for _, tc := range []struct {
		arg, bad string
	}{
		{arg: "console=ttyS0,115200n8"},
		{arg: "talos.config=http://10.5.0.1:8080/config?node=a"},
		{arg: "net.ifnames=0 ipv6.disable=1"},
		{arg: `a="b"`, bad: `"`},
		{arg: "a='b'", bad: "'"},
		{arg: "a=$root", bad: "$"},
		{arg: "a;reboot", bad: ";"},
		{arg: "a\nlinux /evil", bad: "\n"},
		{arg: "#x", bad: "#"},
		{arg: "a\\b", bad: "\\"},
	} {
		err := CheckCmdline(tc.arg)

		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), "cannot hold "+strconv.Quote(tc.bad))):
			t.Errorf("%q: error %v, want one naming %q", tc.arg, err, tc.bad)
		}
	}
}
