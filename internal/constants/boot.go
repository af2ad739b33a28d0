package constants

// EmbeddedConfigDir holds the machine config baked into an image (talosbox
// imager iso|pxe --embedded-config), as Talos's imager places it in the
// root filesystem: read once at boot, then hidden under an empty
// read-only tmpfs, since it holds the cluster's secrets.
const EmbeddedConfigDir = "/usr/local/etc/talos"

// EmbeddedConfigPath is the embedded config itself.
const EmbeddedConfigPath = EmbeddedConfigDir + "/config.yaml"
