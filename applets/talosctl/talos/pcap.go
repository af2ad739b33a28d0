package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/pcap"
)

// NewPcapCommand is `talosctl pcap`, Talos's flags and behaviour: a pcap
// file from the node, printed as packets or saved with --output.
func NewPcapCommand(g *global.Args) *cobra.Command {
	var (
		iface, filter, output string
		promisc               bool
		duration              time.Duration
	)

	cmd := &cobra.Command{
		Use:     "pcap",
		Aliases: []string{"tcpdump"},
		Short:   "Capture the network packets from the node.",
		Long: `The command launches packet capture on the node and streams back the packets as raw pcap file.

Default behavior is to decode the packets with internal decoder to stdout:

    talosctl pcap -i eth0

Raw pcap file can be saved with ` + "`--output`" + ` flag:

    talosctl pcap -i eth0 --output eth0.pcap

Output can be piped to tcpdump:

    talosctl pcap -i eth0 -o - | tcpdump -vvv -r -

BPF filter can be applied, but it has to compiled to BPF instructions first using tcpdump.
Correct link type should be specified for the tcpdump: EN10MB for Ethernet links and RAW
for e.g. Wireguard tunnels:

    talosctl pcap -i eth0 --bpf-filter "$(tcpdump -dd -y EN10MB 'tcp and dst port 80')"

As packet capture is transmitted over the network, it is recommended to filter out the Talos API traffic,
e.g. by excluding packets with the port 50000.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prog, err := parseBPF(filter)
			if err != nil {
				return err
			}

			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				ctx := cmd.Context()

				if duration > 0 {
					var cancel context.CancelFunc

					ctx, cancel = context.WithTimeout(ctx, duration)
					defer cancel()
				}

				results := global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (struct{}, error) {
					stream, err := c.Machine.PacketCapture(ctx, &machine.PacketCaptureRequest{Interface: iface, Promiscuous: promisc, BpfFilter: prog})
					if err != nil {
						return struct{}{}, err
					}

					r, w := io.Pipe()

					go func() { w.CloseWithError(client.CopyStream(stream, w)) }()

					var out io.Writer

					switch output {
					case "":
						return struct{}{}, ended(printPackets(cmd.OutOrStdout(), r))
					case "-":
						out = cmd.OutOrStdout()
					default:
						f, err := os.Create(output)
						if err != nil {
							return struct{}{}, err
						}
						defer f.Close() //nolint:errcheck

						out = f
					}

					_, err = io.Copy(out, r)

					return struct{}{}, ended(err)
				})

				return global.ReportErrors(cmd, results)
			})
		},
	}

	fl := cmd.Flags()
	fl.StringVarP(&iface, "interface", "i", "eth0", "interface name to capture packets on")
	fl.BoolVar(&promisc, "promiscuous", false, "put interface into promiscuous mode")
	fl.StringVarP(&output, "output", "o", "", "if not set, decode packets to stdout; if set write raw pcap data to a file, use '-' for stdout")
	fl.StringVar(&filter, "bpf-filter", "", "bpf filter to apply, tcpdump -dd format")
	fl.DurationVar(&duration, "duration", 0, "duration of the capture")

	return cmd
}

// ended treats the end of a --duration (or Ctrl-C) as the capture's
// normal end.
func ended(err error) error {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil
	case status.Code(err) == codes.DeadlineExceeded, status.Code(err) == codes.Canceled:
		return nil
	}

	return err
}

// printPackets prints a line per packet, as tcpdump does without -v.
func printPackets(w io.Writer, r io.Reader) error {
	pr, err := pcap.NewReader(r)
	if errors.Is(err, io.EOF) {
		return nil // nothing captured at all
	}

	if err != nil {
		return fmt.Errorf("error opening pcap reader: %w", err)
	}

	for {
		p, err := pr.Next()
		if err != nil {
			return err
		}

		fmt.Fprintf(w, "%s %s\n", p.Time.Format("15:04:05.000000"), pcap.Summary(pr.LinkType, p.Data))
	}
}

// parseBPF reads `tcpdump -dd` output: lines "{ 0x30, 0, 0, 0x00000000 },".
func parseBPF(in string) ([]*machine.BPFInstruction, error) {
	var out []*machine.BPFInstruction

	for i, line := range strings.Split(strings.TrimSpace(in), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}

		ins := &machine.BPFInstruction{}

		if n, err := fmt.Sscanf(line, "{ 0x%x, %d, %d, 0x%x },", &ins.Op, &ins.Jt, &ins.Jf, &ins.K); err != nil || n != 4 {
			return nil, fmt.Errorf("--bpf-filter line %d: %q is not a `tcpdump -dd` instruction ({ 0x28, 0, 0, 0x0000000c },)", i+1, line)
		}

		out = append(out, ins)
	}

	return out, nil
}
