// The upstream OpAMP Supervisor, built from its published module. `go install` refuses that module
// (its go.mod has replace directives), so this main module requires it and drives its public
// packages in the same sequence as the upstream main: load --config, make the logger, create and
// start the supervisor, wait for os.Interrupt (only: that is how upstream behaves and what the
// signal tests must observe), shut down.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"

	"github.com/open-telemetry/opentelemetry-collector-contrib/cmd/opampsupervisor/supervisor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/cmd/opampsupervisor/supervisor/config"
	"github.com/open-telemetry/opentelemetry-collector-contrib/cmd/opampsupervisor/supervisor/telemetry"
)

func main() {
	path := flag.String("config", "", "supervisor configuration file")
	flag.Parse()
	cfg, err := config.Load(*path)
	if err != nil {
		log.Fatalf("loading %s: %v", *path, err)
	}
	logger, err := telemetry.NewLogger(cfg.Telemetry.Logs)
	if err != nil {
		log.Fatalf("logger: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := supervisor.NewSupervisor(ctx, logger.Named("supervisor"), cfg)
	if err != nil {
		log.Fatalf("creating the supervisor: %v", err)
	}
	if err := s.Start(ctx); err != nil {
		log.Fatalf("starting the supervisor: %v", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	s.Shutdown()
}
