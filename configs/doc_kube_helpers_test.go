package configs_test

import (
	"encoding/base64"
	"encoding/json"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func jsonString(s string) string {
	b, _ := json.Marshal(s) //nolint:errchkjson // a string

	return string(b)
}
