// An OpAMP server on opamp-go's server package, for the real-peer tests.
//
//	opampserver --addr 127.0.0.1:0 --port-file F --record R [--token T] [--tls-cert C --tls-key K]
//	            [--commands FILE]
//
// Every connection attempt and every AgentToServer is appended to R as one JSON line (the same
// idea as tests/servers/opamp_test_server.cpp, decoded here by opamp-go instead of our codec).
// With --token, an upgrade whose Authorization is not "Bearer T" is refused with 401. --commands
// is polled; each new line is a JSON offer {"to": service.name or "", "name", "version", "url",
// "hash" (hex), "signature_file", "type": "top"|"addon"} that is sent at once to the matching
// live connections and again in the reply to any of their reports that does not yet carry its
// all_packages_hash. The same line appended again sends the offer again (a server retrying a
// failed rollout); with "repeat_every_ms" and "repeat_for_ms" it is sent again on that period for
// that long (at least 100 ms apart, for at most 10 minutes: bounded in count and time), each send
// recorded as a "resend" event.
//
// The updater's own health entry (component_health_map["myriarch-updater"]) carries its
// attributes in ComponentHealth field 7 (opamp-spec PR #334), which opamp-go v0.23.0's generated
// code predates: protojson drops it, so the entry's unknown bytes are decoded here with protowire
// and recorded as "updater_attributes" (other entries' as "health_attributes"), so that a test
// sees what opamp-go itself received.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
)

type offer struct {
	To            string `json:"to"`
	Name          string `json:"name"`
	Version       string `json:"version"`
	URL           string `json:"url"`
	Hash          string `json:"hash"`
	SignatureFile string `json:"signature_file"`
	Type          string `json:"type"`
	RepeatEveryMs int64  `json:"repeat_every_ms"`
	RepeatForMs   int64  `json:"repeat_for_ms"`
	msg           *protobufs.PackagesAvailable
}

type peer struct {
	id      int
	conn    types.Connection
	service string
	uid     []byte
}

type state struct {
	mu     sync.Mutex
	record *os.File
	nconn  int
	nmsg   int
	peers  map[int]*peer
	offers []*offer
}

func (s *state) write(fields map[string]any) {
	fields["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	line, _ := json.Marshal(fields)
	s.record.Write(append(line, '\n'))
}

func attrs(kv []*protobufs.KeyValue) map[string]string {
	out := map[string]string{}
	for _, a := range kv {
		out[a.Key] = a.GetValue().GetStringValue()
	}
	return out
}

// The bounds of a repeated offer: a command cannot make the server flood an agent or outlive a
// test by much.
const (
	minRepeatEvery = 100 * time.Millisecond
	maxRepeatFor   = 10 * time.Minute
)

// unknownAttributes decodes field 7 (repeated KeyValue) of a ComponentHealth's unknown bytes: key
// = KeyValue field 1, value = the string_value (field 1) of the AnyValue in KeyValue field 2. A
// malformed field ends the decoding with what was read so far and the error.
func unknownAttributes(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out, protowire.ParseError(n)
		}
		b = b[n:]
		if num != 7 || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return out, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		kv, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return out, protowire.ParseError(n)
		}
		b = b[n:]
		key, anyValue, err := stringFields(kv, 1, 2)
		if err != nil {
			return out, err
		}
		value, _, err := stringFields([]byte(anyValue), 1, 0)
		if err != nil {
			return out, err
		}
		out[key] = value
	}
	return out, nil
}

// stringFields returns the length-delimited fields a and b of a message (the last of each), skipping
// every other field.
func stringFields(m []byte, a, b protowire.Number) (string, string, error) {
	var va, vb string
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return va, vb, protowire.ParseError(n)
		}
		m = m[n:]
		if typ == protowire.BytesType && (num == a || num == b) {
			v, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return va, vb, protowire.ParseError(n)
			}
			m = m[n:]
			if num == a {
				va = string(v)
			} else {
				vb = string(v)
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return va, vb, protowire.ParseError(n)
		}
		m = m[n:]
	}
	return va, vb, nil
}

// recordHealthAttributes adds each health entry's field-7 attributes to a record line.
func recordHealthAttributes(fields map[string]any, h *protobufs.ComponentHealth) {
	others := map[string]any{}
	for name, entry := range h.GetComponentHealthMap() {
		unknown := entry.ProtoReflect().GetUnknown()
		if len(unknown) == 0 {
			continue
		}
		attrs, err := unknownAttributes(unknown)
		if err != nil {
			fields["health_attributes_error"] = name + ": " + err.Error()
		}
		if name == "myriarch-updater" {
			fields["updater_attributes"] = attrs
		} else {
			others[name] = attrs
		}
	}
	if len(others) > 0 {
		fields["health_attributes"] = others
	}
}

func (o *offer) build() error {
	if o.RepeatForMs > 0 || o.RepeatEveryMs > 0 {
		every := time.Duration(o.RepeatEveryMs) * time.Millisecond
		total := time.Duration(o.RepeatForMs) * time.Millisecond
		if every < minRepeatEvery || total <= 0 || total > maxRepeatFor {
			return fmt.Errorf("repeat_every_ms %d, repeat_for_ms %d: every must be at least %v, for in (0, %v]",
				o.RepeatEveryMs, o.RepeatForMs, minRepeatEvery, maxRepeatFor)
		}
	}
	hash, err := hex.DecodeString(o.Hash)
	if err != nil {
		return fmt.Errorf("hash %q: %w", o.Hash, err)
	}
	var sig []byte
	if o.SignatureFile != "" {
		if sig, err = os.ReadFile(o.SignatureFile); err != nil {
			return err
		}
	}
	kind := protobufs.PackageType_PackageType_TopLevel
	if o.Type == "addon" {
		kind = protobufs.PackageType_PackageType_Addon
	}
	pkgHash := sha256.Sum256([]byte(o.Name + "\x00" + o.Version + "\x00" + o.Hash))
	allHash := sha256.Sum256(pkgHash[:])
	o.msg = &protobufs.PackagesAvailable{
		Packages: map[string]*protobufs.PackageAvailable{o.Name: {
			Type: kind, Version: o.Version, Hash: pkgHash[:],
			File: &protobufs.DownloadableFile{DownloadUrl: o.URL, ContentHash: hash, Signature: sig},
		}},
		AllPackagesHash: allHash[:],
	}
	return nil
}

// pending returns the offer a peer has not acknowledged yet (the newest one for its service).
func (s *state) pending(p *peer, reported []byte) *offer {
	for i := len(s.offers) - 1; i >= 0; i-- {
		o := s.offers[i]
		if o.To == "" || o.To == p.service {
			if string(reported) == string(o.msg.AllPackagesHash) {
				return nil
			}
			return o
		}
	}
	return nil
}

func (s *state) onMessage(p *peer, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nmsg++
	p.uid = m.InstanceUid
	fields := map[string]any{"event": "message", "conn": p.id, "n": s.nmsg,
		"instance_uid": hex.EncodeToString(m.InstanceUid), "sequence_num": m.SequenceNum,
		"capabilities": m.Capabilities, "flags": m.Flags}
	if d := m.AgentDescription; d != nil {
		id := attrs(d.IdentifyingAttributes)
		p.service = id["service.name"]
		fields["identifying"] = id
		fields["non_identifying"] = attrs(d.NonIdentifyingAttributes)
	}
	recordHealthAttributes(fields, m.Health)
	// Default values too: PackageStatusEnum_Installed is 0, which plain Marshal leaves out.
	if raw, err := (protojson.MarshalOptions{EmitDefaultValues: true}).Marshal(m); err == nil {
		fields["msg"] = json.RawMessage(raw)
	}
	s.write(fields)
	reply := &protobufs.ServerToAgent{InstanceUid: m.InstanceUid}
	if p.service == "" && m.AgentDescription == nil {
		// An agent that never described itself is asked for its full state (spec behaviour).
		reply.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	if o := s.pending(p, m.GetPackageStatuses().GetServerProvidedAllPackagesHash()); o != nil {
		reply.PackagesAvailable = o.msg
	}
	return reply
}

func (s *state) onConnecting(r *http.Request, token string) types.ConnectionResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nconn++
	id := s.nconn
	auth := r.Header.Get("Authorization")
	s.write(map[string]any{"event": "open", "conn": id, "authorization": auth,
		"path": r.URL.Path, "user_agent": r.Header.Get("User-Agent")})
	if token != "" && auth != "Bearer "+token {
		s.write(map[string]any{"event": "rejected", "conn": id, "status": 401})
		return types.ConnectionResponse{Accept: false, HTTPStatusCode: http.StatusUnauthorized}
	}
	p := &peer{id: id}
	return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
		OnConnected: func(_ context.Context, c types.Connection) {
			s.mu.Lock()
			p.conn = c
			s.peers[id] = p
			s.mu.Unlock()
		},
		OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
			return s.onMessage(p, m)
		},
		OnConnectionClose: func(types.Connection) {
			s.mu.Lock()
			delete(s.peers, id)
			s.write(map[string]any{"event": "closed", "conn": id})
			s.mu.Unlock()
		},
	}}
}

// send sends an offer to the matching live connections; the caller holds s.mu.
func (s *state) send(o *offer) int {
	sent := 0
	for _, p := range s.peers {
		if o.To == "" || o.To == p.service {
			msg := &protobufs.ServerToAgent{InstanceUid: p.uid, PackagesAvailable: o.msg}
			if err := p.conn.Send(context.Background(), msg); err != nil {
				s.write(map[string]any{"event": "send_failed", "conn": p.id, "error": err.Error()})
			} else {
				sent++
			}
		}
	}
	return sent
}

// repeat sends an offer again every RepeatEveryMs until RepeatForMs has passed (bounds checked in
// build), as a server would that resends a failed offer on a timer.
func (s *state) repeat(o *offer) {
	every := time.Duration(o.RepeatEveryMs) * time.Millisecond
	end := time.Now().Add(time.Duration(o.RepeatForMs) * time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		now := <-tick.C
		if now.After(end) {
			return
		}
		s.mu.Lock()
		sent := s.send(o)
		s.write(map[string]any{"event": "resend", "n": n, "version": o.Version, "peers": sent})
		s.mu.Unlock()
	}
}

// pollCommands reads new offer lines from path every 100 ms; a bad line is recorded, not fatal.
func (s *state) pollCommands(path string) {
	var done int64
	for {
		time.Sleep(100 * time.Millisecond)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		f.Seek(done, 0)
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break // a partial last line is read again once it is complete
			}
			done += int64(len(line))
			o := &offer{}
			if err := json.Unmarshal([]byte(line), o); err == nil {
				err = o.build()
			}
			s.mu.Lock()
			if err != nil {
				s.write(map[string]any{"event": "bad_command", "line": line, "error": err.Error()})
			} else {
				s.offers = append(s.offers, o)
				s.write(map[string]any{"event": "offer", "to": o.To, "name": o.Name, "version": o.Version})
				s.send(o)
				if o.RepeatForMs > 0 {
					go s.repeat(o)
				}
			}
			s.mu.Unlock()
		}
		f.Close()
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	portFile := flag.String("port-file", "", "file that receives the bound port once listening")
	recordPath := flag.String("record", "", "JSON-lines record of connections and reports")
	token := flag.String("token", "", "bearer token every agent must present")
	cert := flag.String("tls-cert", "", "server certificate (PEM); with --tls-key, serves wss://")
	key := flag.String("tls-key", "", "server key (PEM)")
	commands := flag.String("commands", "", "file of JSON offer lines, polled")
	flag.Parse()
	if *recordPath == "" || *portFile == "" {
		log.Fatal("--record and --port-file are required")
	}
	rec, err := os.OpenFile(*recordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatalf("record %s: %v", *recordPath, err)
	}
	s := &state{record: rec, peers: map[int]*peer{}}
	settings := server.StartSettings{ListenEndpoint: *addr, Settings: server.Settings{
		Callbacks: types.Callbacks{OnConnecting: func(r *http.Request) types.ConnectionResponse {
			return s.onConnecting(r, *token)
		}},
	}}
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			log.Fatalf("TLS key pair: %v", err)
		}
		settings.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}}
	}
	srv := server.New(nil)
	if err := srv.Start(settings); err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	_, port, _ := splitPort(srv.Addr().String())
	if err := os.WriteFile(*portFile+".tmp", []byte(port+"\n"), 0o644); err != nil {
		log.Fatalf("port file: %v", err)
	}
	os.Rename(*portFile+".tmp", *portFile) // readers never see a half-written port
	if *commands != "" {
		go s.pollCommands(*commands)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Stop(ctx)
}

func splitPort(hostport string) (string, string, error) {
	for i := len(hostport) - 1; i >= 0; i-- {
		if hostport[i] == ':' {
			return hostport[:i], hostport[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("no port in %q", hostport)
}
