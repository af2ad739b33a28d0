// Package hardware publishes what the firmware says about the machine:
// Talos's hardware resources, from the SMBIOS table.
package hardware

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/resources/hardware"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/smbios"
)

// SystemInfoController publishes the SystemInformation, one Processor per
// populated socket and one MemoryModule per populated slot, from the
// SMBIOS table read once at start: firmware does not change while the
// machine runs. The UUID follows META's UUIDOverride tag, as in Talos.
//
// A machine without a table (a container) gets no hardware resources,
// as Talos publishes none in a container; the controller then idles.
type SystemInfoController struct {
	// SysRoot is where sysfs is ("/sys").
	SysRoot string
	// ProcRoot is where procfs is ("/proc"). When the table lists no memory
	// devices the memory total stands in for them, as in Talos.
	ProcRoot string
}

// Name implements bus.Controller.
func (*SystemInfoController) Name() string { return "hardware.SystemInfoController" }

// uuidOverride is the MetaKey that replaces the hardware's UUID.
var uuidOverride = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MetaKeyType, ID: meta.TagID(meta.UUIDOverride)}

// Inputs implements bus.Controller.
func (*SystemInfoController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: uuidOverride.Namespace, Type: uuidOverride.Type, ID: uuidOverride.ID}}
}

// Outputs implements bus.Controller.
func (*SystemInfoController) Outputs() []bus.Output {
	return []bus.Output{{Type: hardware.SystemInformationType}, {Type: hardware.ProcessorType}, {Type: hardware.MemoryModuleType}}
}

// Run implements bus.Controller.
func (c *SystemInfoController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	sysRoot := c.SysRoot
	if sysRoot == "" {
		sysRoot = "/sys"
	}

	table, err := smbios.Read(sysRoot)
	if errors.Is(err, smbios.ErrNoTable) {
		r.Logger().Info("no SMBIOS table: publishing no hardware resources", "error", err)
		<-ctx.Done()

		return nil
	}

	if err != nil {
		return err
	}

	system, processors := systemSpec(table), processorSpecs(table)

	modules, err := c.memorySpecs(table)
	if err != nil {
		return err
	}

	for {
		if err := c.publish(ctx, r, system, processors, modules); err != nil {
			return err
		}

		r.ResetRestartBackoff()

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}
	}
}

func (c *SystemInfoController) publish(ctx context.Context, r bus.ControllerRuntime, system hardware.SystemInformationSpec,
	processors map[string]hardware.ProcessorSpec, modules map[string]hardware.MemoryModuleSpec,
) error {
	override, err := bus.GetAs[*runtime.MetaKey](ctx, r, uuidOverride)

	switch {
	case err == nil && override.TypedSpec().Value != "":
		system.UUID = override.TypedSpec().Value
	case err != nil && !bus.IsNotFound(err):
		return fmt.Errorf("uuid override: %w", err)
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), hardware.Namespace, hardware.SystemInformationType,
		map[string]hardware.SystemInformationSpec{hardware.SystemInformationID: system}); err != nil {
		return err
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), hardware.Namespace, hardware.ProcessorType, processors); err != nil {
		return err
	}

	return bus.SyncOutputs(ctx, r, c.Name(), hardware.Namespace, hardware.MemoryModuleType, modules)
}

func systemSpec(t *smbios.SMBIOS) hardware.SystemInformationSpec {
	s := t.System

	return hardware.SystemInformationSpec{
		Manufacturer: s.Manufacturer, ProductName: s.ProductName, Version: s.Version, BIOSVersion: t.BIOS.Version,
		SerialNumber: s.SerialNumber, UUID: s.UUID, WakeUpType: s.WakeUpType, SKUNumber: s.SKUNumber,
	}
}

// resourceID names a resource after its socket or slot as Talos does,
// spaces made dashes. Firmware that leaves the name out gets the
// structure's handle instead: an ID cannot be empty.
func resourceID(name string, handle uint16) string {
	if name == "" {
		return fmt.Sprintf("handle-0x%04x", handle)
	}

	return strings.ReplaceAll(name, " ", "-")
}

func processorSpecs(t *smbios.SMBIOS) map[string]hardware.ProcessorSpec {
	out := map[string]hardware.ProcessorSpec{}

	for _, p := range t.Processors {
		if !p.Populated() {
			continue
		}

		out[resourceID(p.SocketDesignation, p.Handle)] = hardware.ProcessorSpec{
			Socket: p.SocketDesignation, Manufacturer: p.Manufacturer, ProductName: p.Version,
			MaxSpeed: uint32(p.MaxSpeedMHz), BootSpeed: uint32(p.CurrentSpeedMHz), Status: uint32(p.Status),
			SerialNumber: p.SerialNumber, AssetTag: p.AssetTag, PartNumber: p.PartNumber,
			CoreCount: uint32(p.CoreCount), CoreEnabled: uint32(p.CoreEnabled), ThreadCount: uint32(p.ThreadCount),
		}
	}

	return out
}

func (c *SystemInfoController) memorySpecs(t *smbios.SMBIOS) (map[string]hardware.MemoryModuleSpec, error) {
	out := map[string]hardware.MemoryModuleSpec{}

	// Talos falls back to the kernel's total only when the table has no
	// memory devices at all, not when every slot is empty.
	if len(t.MemoryDevices) == 0 {
		kib, err := memTotalKiB(c.ProcRoot)
		if err != nil {
			return nil, err
		}

		out[hardware.MemoryModuleUnknownID] = hardware.MemoryModuleSpec{Size: uint32(min(kib>>10, 1<<32-1)), Manufacturer: hardware.MemoryModuleUnknownID}

		return out, nil
	}

	for _, m := range t.MemoryDevices {
		if !m.Installed {
			continue
		}

		// The device locator alone repeats on some boards (a "DIMM 0" per
		// channel), so the bank locator joins it, as in Talos.
		name := m.DeviceLocator
		if m.BankLocator != "" {
			name = strings.TrimSpace(name + " " + m.BankLocator)
		}

		out[resourceID(name, m.Handle)] = hardware.MemoryModuleSpec{
			Size: uint32(min(m.SizeKiB>>10, 1<<32-1)), DeviceLocator: m.DeviceLocator, BankLocator: m.BankLocator,
			Speed: m.Speed, Manufacturer: m.Manufacturer, SerialNumber: m.SerialNumber, AssetTag: m.AssetTag, ProductName: m.PartNumber,
		}
	}

	return out, nil
}

// memTotalKiB reads MemTotal from procRoot/meminfo ("/proc").
func memTotalKiB(procRoot string) (uint64, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}

	path := filepath.Join(procRoot, "meminfo")

	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("memory total: %w", err)
	}
	defer f.Close()

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory total in %s: %w", path, err)
			}

			return v, nil
		}
	}

	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memory total: %w", err)
	}

	return 0, fmt.Errorf("memory total: no MemTotal in %s", path)
}
