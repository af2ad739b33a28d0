// Package configs holds the Talos-compatible v1alpha1 machine config: its
// types, a strict decoder that reports unknown fields with line numbers and
// paths, an encoder, validation that reports every problem in one pass, a
// comparison of two configs by meaning (layout, comments, key order and
// spelled-out zero values are not changes), and an encoding with the
// secrets masked for readers.
//
// The config is one YAML document with the keys version, debug, persist,
// machine and cluster. Field names and meaning follow Talos so that configs
// written for Talos load here unchanged.
//
//	cfg, err := configs.Decode(data)             // *DecodeError or *Errors
//	warnings, err := cfg.Validate(configs.ModeMetal, configs.WithStrict(false))
//	out, err := cfg.Encode()
//	changes, err := configs.Compare(oldCfg, cfg) // none when they mean the same
//	diff, err := configs.Diff(oldCfg, cfg)       // the changes, one a line
//	masked, err := cfg.EncodeRedacted()          // secrets as "******"
//
// Decode(Encode(c)) equals c for every config Decode returns: empty lists and
// maps decode to nil, and free-form sections keep their scalar types.
package configs
