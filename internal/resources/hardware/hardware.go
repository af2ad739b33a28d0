package hardware

// Namespace is where the resources live, as Talos names it.
const Namespace = "hardware"
