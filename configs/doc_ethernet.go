package configs

// EthernetConfig is Talos's EthernetConfig: ethtool settings of a link
// (features, ring sizes, channels, wake-on-LAN). talosbox's networkd has
// no ethtool client yet, so the document is refused; it decodes and is
// checked by Talos's rules.
type EthernetConfig struct {
	Name      string                  `yaml:"name"`
	Features  map[string]bool         `yaml:"features,omitempty"`
	Rings     *EthernetRingsConfig    `yaml:"rings,omitempty"`
	Channels  *EthernetChannelsConfig `yaml:"channels,omitempty"`
	WakeOnLAN []string                `yaml:"wakeOnLan,omitempty"`
}

// EthernetRingsConfig are a link's ring buffer sizes.
type EthernetRingsConfig struct {
	RX           *uint32 `yaml:"rx,omitempty"`
	TX           *uint32 `yaml:"tx,omitempty"`
	RXMini       *uint32 `yaml:"rx-mini,omitempty"`
	RXJumbo      *uint32 `yaml:"rx-jumbo,omitempty"`
	RXBufLen     *uint32 `yaml:"rx-buf-len,omitempty"`
	CQESize      *uint32 `yaml:"cqe-size,omitempty"`
	TXPush       *bool   `yaml:"tx-push,omitempty"`
	RXPush       *bool   `yaml:"rx-push,omitempty"`
	TXPushBufLen *uint32 `yaml:"tx-push-buf-len,omitempty"`
	TCPDataSplit *bool   `yaml:"tcp-data-split,omitempty"`
}

// EthernetChannelsConfig are a link's queue counts.
type EthernetChannelsConfig struct {
	RX       *uint32 `yaml:"rx,omitempty"`
	TX       *uint32 `yaml:"tx,omitempty"`
	Other    *uint32 `yaml:"other,omitempty"`
	Combined *uint32 `yaml:"combined,omitempty"`
}

// Kind implements Document.
func (*EthernetConfig) Kind() string { return "EthernetConfig" }

// DocumentName implements NamedDocument.
func (e *EthernetConfig) DocumentName() string { return e.Name }

func (e *EthernetConfig) check(v *validator, path string) {
	if e.Name == "" {
		v.errorf(path+".name", "name is required")
	}

	v.errorf(path, "talosbox does not implement EthernetConfig yet (ethtool features, rings, channels and wake-on-LAN): "+
		"remove the document; the link keeps its driver's settings")
}

// fold: nothing while the document is refused.
func (*EthernetConfig) fold(*folding) {}
