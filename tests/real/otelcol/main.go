// A small collector distribution for the real-peer tests: the components the supervisor's
// generated configs name (nop receiver and exporter, the opamp extension), the ones our base config
// uses (OTLP receiver, debug exporter, health_check extension), and nothing else, so that it builds
// in minutes on two cores. It is NOT otelcol-contrib. The version string is set at link time
// (-X main.version=...) so that two builds differ and an update has something to swap.
//
// A third build sets -X main.brokenStart=<reason>: its --version and `validate` work, but running
// the collector fails at once with that reason. It is the regression a preflight cannot see (a
// build that dies at start), and what the real update test rolls back.
package main

import (
	"errors"
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/opampextension"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/nopexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/nopreceiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

var version = "0.0.0-unset"

// brokenStart, when set at link time, makes every run of the collector itself fail with it.
var brokenStart = ""

func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(), nopreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		debugexporter.NewFactory(), nopexporter.NewFactory()); err != nil {
		return f, err
	}
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](
		healthcheckextension.NewFactory(), opampextension.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-real",
			Description: "myriarch test distribution (not contrib)",
			Version:     version,
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory(),
				},
			},
		},
	}
	cmd := otelcol.NewCommand(settings)
	if brokenStart != "" {
		// Only the root command runs the collector; `validate` and the version flag are untouched.
		cmd.RunE = func(*cobra.Command, []string) error { return errors.New(brokenStart) }
	}
	if err := cmd.Execute(); err != nil {
		log.Fatalf("collector: %v", err)
	}
}
