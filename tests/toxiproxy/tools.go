//go:build tools

// Keeps Toxiproxy's server command in go.mod and go.sum: build.sh builds it from here.
package tools

import _ "github.com/Shopify/toxiproxy/v2/cmd/server"
