package mgmt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/pki"
)

func NewGenCommand(_ *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate CAs, certificates, private keys, secrets and machine configs",
		Long: `Generate offline material: a secrets bundle (gen secrets), machine configs and a
talosconfig (gen config), and PKI pieces for rotating an admin certificate by
hand (gen ca, key, csr, crt, keypair). Files holding private keys are 0600.`,
	}

	cmd.AddCommand(
		newGenSecretsCommand(),
		newGenConfigCommand(),
		newGenCACommand(),
		newGenKeyCommand(),
		newGenCSRCommand(),
		newGenCrtCommand(),
		newGenKeypairCommand(),
	)

	return cmd
}

func newGenSecretsCommand() *cobra.Command {
	var (
		output string
		force  bool
	)

	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Generates a secrets bundle file which can later be used to generate a config",
		Long: `Generates secrets.yaml: the cluster id and secret, the Kubernetes bootstrap token,
the trustd token, the secretbox encryption secret, and the OS (Ed25519),
Kubernetes, aggregator and etcd (ECDSA P-256) CAs with the service-account key.
Pass it to 'gen config --with-secrets' to generate configs for the same cluster.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := refuseOverwrite(output, force); err != nil {
				return fmt.Errorf("gen secrets: %w", err)
			}

			// A new directory for secrets is private to the user.
			if err := os.MkdirAll(filepath.Dir(output), 0o700); err != nil {
				return fmt.Errorf("gen secrets: %w", err)
			}

			b, err := pki.NewBundle(pki.BundleOptions{})
			if err != nil {
				return fmt.Errorf("gen secrets: %w", err)
			}

			if err := pki.SaveBundle(output, b); err != nil {
				return fmt.Errorf("gen secrets: %w", err)
			}

			return nil
		},
	}

	cmd.Flags().StringVarP(&output, "output-file", "o", "secrets.yaml", "path of the output file")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the output file if it exists")

	return cmd
}

// refuseOverwrite keeps a generated secret from silently replacing one that
// a cluster may already depend on.
func refuseOverwrite(path string, force bool) error {
	if force {
		return nil
	}

	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists, use --force to overwrite", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	return nil
}

func newGenCACommand() *cobra.Command {
	opts := pki.GenCAOptions{Dir: "."}

	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Generates a self-signed X.509 certificate authority",
		Long:  "Writes ORGANIZATION.crt, ORGANIZATION.key (0600) and ORGANIZATION.sha256 (the SPKI pin) in the current directory.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := pki.GenCA(opts)
			return err
		},
	}

	cmd.Flags().StringVar(&opts.Organization, "organization", "", "X.509 distinguished name for the Organization")
	cmd.Flags().IntVar(&opts.Hours, "hours", 87600, "the hours from now on which the certificate validity period ends")
	cmd.Flags().BoolVar(&opts.RSA, "rsa", false, "generate in RSA format")
	cmd.MarkFlagRequired("organization") //nolint:errcheck // the flag exists

	return cmd
}

func newGenKeyCommand() *cobra.Command {
	var name string

	cmd := &cobra.Command{
		Use:   "key",
		Short: "Generates an Ed25519 private key",
		Long:  "Writes NAME.key (0600) in the current directory.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := pki.GenKey(".", name)
			return err
		},
	}

	cmd.Flags().StringVar(&name, "name", "", "the basename of the generated file")
	cmd.MarkFlagRequired("name") //nolint:errcheck

	return cmd
}

func newGenCSRCommand() *cobra.Command {
	var opts pki.GenCSROptions

	cmd := &cobra.Command{
		Use:   "csr",
		Short: "Generates a CSR using an Ed25519 private key",
		Long:  "Writes KEY.csr next to the key, with the IP addresses as SANs and the roles as the subject's organizations.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := pki.GenCSR(opts)
			return err
		},
	}

	cmd.Flags().StringVar(&opts.Key, "key", "", "path to the PEM encoded Ed25519 private key")
	cmd.Flags().StringSliceVar(&opts.IPs, "ip", nil, "generate the certificate for this IP address")
	cmd.Flags().StringSliceVar(&opts.Roles, "roles", []string{"os:admin"}, "roles")
	cmd.MarkFlagRequired("key") //nolint:errcheck
	cmd.MarkFlagRequired("ip")  //nolint:errcheck

	return cmd
}

func newGenCrtCommand() *cobra.Command {
	opts := pki.GenCrtOptions{Dir: "."}

	cmd := &cobra.Command{
		Use:   "crt",
		Short: "Generates an X.509 Ed25519 certificate",
		Long:  "Signs CSR with the CA (CA.crt and CA.key) into NAME.crt, for client authentication.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := pki.GenCrt(opts)
			return err
		},
	}

	cmd.Flags().StringVar(&opts.CA, "ca", "", "path to the PEM encoded CERTIFICATE, without the .crt extension")
	cmd.Flags().StringVar(&opts.CSR, "csr", "", "path to the PEM encoded CERTIFICATE REQUEST")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the basename of the generated file")
	cmd.Flags().IntVar(&opts.Hours, "hours", 24, "the hours from now on which the certificate validity period ends")

	for _, f := range []string{"ca", "csr", "name"} {
		cmd.MarkFlagRequired(f) //nolint:errcheck
	}

	return cmd
}

func newGenKeypairCommand() *cobra.Command {
	opts := pki.GenKeypairOptions{Dir: "."}

	cmd := &cobra.Command{
		Use:   "keypair",
		Short: "Generates an X.509 Ed25519 key pair",
		Long:  "Writes a self-signed ORGANIZATION.crt and ORGANIZATION.key (0600) in the current directory.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := pki.GenKeypair(opts)
			return err
		},
	}

	cmd.Flags().StringVar(&opts.IP, "ip", "", "generate the certificate for this IP address")
	cmd.Flags().StringVar(&opts.Organization, "organization", "", "X.509 distinguished name for the Organization")
	cmd.MarkFlagRequired("organization") //nolint:errcheck

	return cmd
}
