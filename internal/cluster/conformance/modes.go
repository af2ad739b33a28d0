package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Fast runs every conformance spec in two passes, as Talos's fast mode
// does: the ones that may run beside others with base.Parallel processes,
// then the [Serial] ones alone. Each pass reports into its own directory
// under base.ReportDir. The summary is both passes'.
func Fast(ctx context.Context, base Options) (Summary, error) {
	parallel := base
	parallel.Labels = ConformanceParallel
	parallel.ReportDir = filepath.Join(base.ReportDir, "parallel")

	serial := base
	serial.Labels, serial.Parallel = ConformanceSerial, 1
	serial.ReportDir = filepath.Join(base.ReportDir, "serial")

	var total Summary

	for _, pass := range []Options{parallel, serial} {
		s, err := Run(ctx, pass)
		total = total.Add(s)

		if err != nil {
			return total, err
		}
	}

	return total, nil
}

// Product is PRODUCT.yaml of a CNCF conformance submission.
type Product struct {
	Vendor           string `yaml:"vendor"`
	Name             string `yaml:"name"`
	Version          string `yaml:"version"`
	WebsiteURL       string `yaml:"website_url"`
	DocumentationURL string `yaml:"documentation_url"`
	ProductLogoURL   string `yaml:"product_logo_url"`
	Type             string `yaml:"type"`
	Description      string `yaml:"description"`
	ContactEmail     string `yaml:"contact_email_address,omitempty"`
}

// Talosbox is this distribution's product entry.
func Talosbox(version string) Product {
	return Product{
		Vendor:           "talosbox",
		Name:             "talosbox",
		Version:          version,
		WebsiteURL:       "https://github.com/talosbox/talosbox",
		DocumentationURL: "https://github.com/talosbox/talosbox/blob/main/README.md",
		ProductLogoURL:   "https://github.com/talosbox/talosbox/blob/main/README.md",
		Type:             "distribution",
		Description:      "talosbox is a Talos-style, API-managed, immutable Kubernetes node OS in one statically linked binary.",
	}
}

// CertifiedDir is where certified mode writes, under dir, for Kubernetes
// version k ("1.34.12"): v1.34/talosbox, the layout of a submission to
// cncf/k8s-conformance.
func CertifiedDir(dir, k string) string {
	parts := strings.SplitN(strings.TrimPrefix(k, "v"), ".", 3)
	minor := strings.Join(parts[:min(2, len(parts))], ".")

	return filepath.Join(dir, "v"+minor, "talosbox")
}

// Certified runs every conformance spec one at a time, as a submission
// requires, into base.ReportDir with PRODUCT.yaml beside the results.
func Certified(ctx context.Context, base Options, product Product) (Summary, error) {
	base.Labels, base.Parallel = Conformance, 1

	if base.Timeout == 0 {
		// Ginkgo's default hour is less than a serial run takes.
		base.Timeout = 24 * time.Hour
	}

	if err := os.MkdirAll(base.ReportDir, 0o755); err != nil {
		return Summary{}, err
	}

	data, err := yaml.Marshal(product)
	if err != nil {
		return Summary{}, err
	}

	if err := os.WriteFile(filepath.Join(base.ReportDir, "PRODUCT.yaml"), data, 0o644); err != nil {
		return Summary{}, fmt.Errorf("conformance: %w", err)
	}

	return Run(ctx, base)
}
