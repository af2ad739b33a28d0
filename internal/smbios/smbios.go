// Package smbios decodes the machine's SMBIOS table, the firmware's
// description of the system, its processor sockets and memory slots, as
// Linux exposes it under /sys/firmware/dmi/tables. It reads both the
// SMBIOS 3 (64-bit) and the 2.x (32-bit) entry points and decodes the
// structures Talos's hardware resources need: BIOS (type 0), system
// (type 1), processor (type 4) and memory device (type 17).
//
// Strings are cleaned as Talos's go-smbios cleans them, so resources built
// from them match Talos's: absent or unusable strings are "".
package smbios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoTable: the machine exposes no SMBIOS table (a container, or a
// machine whose firmware has none). It wraps the os error, so
// fs.ErrNotExist matches too.
var ErrNoTable = errors.New("no smbios table")

// Where Linux puts the entry point and the table, under sysfs.
const (
	EntryPointPath = "firmware/dmi/tables/smbios_entry_point"
	TablePath      = "firmware/dmi/tables/DMI"
)

// Read decodes the table under sysRoot ("/sys").
func Read(sysRoot string) (*SMBIOS, error) {
	ep, err := os.ReadFile(filepath.Join(sysRoot, EntryPointPath))
	if err != nil {
		return nil, readError(err)
	}

	table, err := os.ReadFile(filepath.Join(sysRoot, TablePath))
	if err != nil {
		return nil, readError(err)
	}

	s, err := Parse(ep, table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(sysRoot, "firmware/dmi/tables"), err)
	}

	return s, nil
}

func readError(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrNoTable, err)
	}

	return fmt.Errorf("read smbios: %w", err)
}
