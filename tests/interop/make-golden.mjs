// Golden OpAMP encodings made by a codec we did not write: the protobuf-es code that
// @elastic/opamp-client-node generated from the upstream opamp.proto (as opamp-peer.mjs uses it).
// The files are checked in under tests/unit/opamp/golden/, so the unit tests compare our codec
// with upstream bytes without node. Run by hand after `npm install --no-audit --no-fund` here:
//
//   node make-golden.mjs [OUT_DIR]          writes <name>.bin and <name>.txt for every case
//   node make-golden.mjs --check [OUT_DIR]  exits 1 when a committed file differs from what the
//                                           upstream code makes now (the interop test runs this)
//
// OUT_DIR defaults to ../unit/opamp/golden. Every value is fixed (no clock, no randomness), so a
// second run writes the same bytes. The expected values in tests/unit/opamp/golden_test.cpp are
// the same as here; change both together.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "package.json"));
const { create, toBinary, toJsonString } = require("@bufbuild/protobuf");
const generated = path.join(here, "node_modules/@elastic/opamp-client-node/lib/generated");
const pb = require(path.join(generated, "opamp_pb.js"));

const args = process.argv.slice(2);
const check = args[0] === "--check";
const outDir = path.resolve(args[check ? 1 : 0] ?? path.join(here, "../unit/opamp/golden"));

const hex = (s) => Uint8Array.from(Buffer.from(s, "hex"));
const text = (s) => Uint8Array.from(Buffer.from(s, "utf8"));
const str = (key, value) => ({ key, value: { value: { case: "stringValue", value } } });

const UID = hex("0190a6f46c1e7a3b9c2d0123456789ab");
const NEW_UID = hex("0190a6f5000070008000feedfacecafe");
const AGENT_HAS_HASH = hex("a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0");
const OFFERED_HASH = text("package-hash-0.117.0");
const ADDON_HASH = text("addon-hash-1.0");
const ALL_HASH = text("all-packages-hash-1");
// 32 bytes with a 0x00 and bytes >= 0x80: a bytes field must not stop at NUL or sign-extend.
const CONTENT_HASH = hex("00ff5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a80ff");
// The Sigstore bundle JSON travels as bytes; non-ASCII text must come through unchanged.
const SIGNATURE = text(
  JSON.stringify({ mediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", note: "é✓" }),
);
const { AgentCapabilities: AC, ServerCapabilities: SC } = pb;
const AGENT_CAPS = BigInt(
  AC.AgentCapabilities_ReportsStatus |
    AC.AgentCapabilities_AcceptsPackages |
    AC.AgentCapabilities_ReportsPackageStatuses |
    AC.AgentCapabilities_ReportsHealth |
    AC.AgentCapabilities_ReportsHeartbeat,
);
const SERVER_CAPS = BigInt(
  SC.ServerCapabilities_AcceptsStatus |
    SC.ServerCapabilities_OffersPackages |
    SC.ServerCapabilities_AcceptsPackagesStatus,
);

// What the agent sends (src/opamp/agent.cpp): the attributes it reports are all strings.
const description = {
  identifyingAttributes: [
    str("service.name", "myriarch-updater"),
    str("service.instance.id", "0190a6f4-6c1e-7a3b-9c2d-0123456789ab"),
    str("service.version", "0.1.0"),
  ],
  nonIdentifyingAttributes: [
    str("host.name", "pod-7"),
    str("os.type", "linux"),
    str("host.arch", "amd64"),
    str("dev.myriarch.updater.install_method", "container"),
    str("dev.myriarch.updater.image_collector_version", "0.115.0"),
    str("dev.myriarch.collector.instance_uid", "0190a6f3-1111-7222-8333-444455556666"),
    str("dev.myriarch.collector.version", "0.116.0"),
  ],
};

const cases = [
  {
    name: "a2s-full-report",
    schema: pb.AgentToServerSchema,
    what:
      "AgentToServer: the first, full report (every field the agent fills) with a multi-byte " +
      "sequence_num, flags RequestInstanceUid, a healthy ComponentHealth and two package " +
      "statuses (Downloading with download_details; InstallFailed for an add-on).",
    msg: {
      instanceUid: UID,
      sequenceNum: 300n,
      agentDescription: description,
      capabilities: AGENT_CAPS,
      health: {
        healthy: true,
        startTimeUnixNano: 1767225600000000000n,
        status: "running",
        statusTimeUnixNano: 1767225601500000000n,
      },
      packageStatuses: {
        packages: {
          "otelcol-contrib": {
            name: "otelcol-contrib",
            agentHasVersion: "0.116.0",
            agentHasHash: AGENT_HAS_HASH,
            serverOfferedVersion: "0.117.0",
            serverOfferedHash: OFFERED_HASH,
            status: pb.PackageStatusEnum.PackageStatusEnum_Downloading,
            downloadDetails: { downloadPercent: 42.5, downloadBytesPerSecond: 1048576.25 },
          },
          "addon-x": {
            name: "addon-x",
            serverOfferedVersion: "1.0",
            serverOfferedHash: ADDON_HASH,
            status: pb.PackageStatusEnum.PackageStatusEnum_InstallFailed,
            errorMessage: "unsupported package type",
          },
        },
        serverProvidedAllPackagesHash: ALL_HASH,
      },
      flags: BigInt(pb.AgentToServerFlags.AgentToServerFlags_RequestInstanceUid),
    },
  },
  {
    name: "a2s-unhealthy-failed",
    schema: pb.AgentToServerSchema,
    what:
      "AgentToServer: a change report: unhealthy (healthy=false is the default and is not on " +
      "the wire), last_error set, one package InstallFailed after a rollback, and the " +
      "PackageStatuses error_message.",
    msg: {
      instanceUid: UID,
      sequenceNum: 7n,
      capabilities: AGENT_CAPS,
      health: {
        healthy: false,
        startTimeUnixNano: 1767225600000000000n,
        lastError: "health check: GET http://127.0.0.1:13133/ answered 503",
        status: "collector unhealthy",
        statusTimeUnixNano: 1767225700000000000n,
      },
      packageStatuses: {
        packages: {
          "otelcol-contrib": {
            name: "otelcol-contrib",
            agentHasVersion: "0.116.0",
            agentHasHash: AGENT_HAS_HASH,
            serverOfferedVersion: "0.117.0",
            serverOfferedHash: OFFERED_HASH,
            status: pb.PackageStatusEnum.PackageStatusEnum_InstallFailed,
            errorMessage: "verify: not verified: identity: certificate subject differs",
          },
        },
        serverProvidedAllPackagesHash: ALL_HASH,
        errorMessage: "one package failed",
      },
    },
  },
  {
    name: "a2s-heartbeat",
    schema: pb.AgentToServerSchema,
    what:
      "AgentToServer: a heartbeat as the agent sends it (instance_uid, sequence_num, " +
      "capabilities).",
    msg: { instanceUid: UID, sequenceNum: 12n, capabilities: AGENT_CAPS },
  },
  {
    name: "a2s-disconnect",
    schema: pb.AgentToServerSchema,
    what: "AgentToServer: the goodbye on shutdown: agent_disconnect (an empty message, present).",
    msg: { instanceUid: UID, sequenceNum: 13n, capabilities: AGENT_CAPS, agentDisconnect: {} },
  },
  {
    name: "a2s-attribute-types",
    schema: pb.AgentToServerSchema,
    what:
      "AgentToServer: attributes of every AnyValue type, as another agent may send them to the " +
      "test server. Decoded only: our encoder writes string values alone.",
    msg: {
      instanceUid: UID,
      sequenceNum: 1n,
      agentDescription: {
        identifyingAttributes: [str("service.name", "other-agent")],
        nonIdentifyingAttributes: [
          { key: "a.bool", value: { value: { case: "boolValue", value: true } } },
          { key: "a.int", value: { value: { case: "intValue", value: -42n } } },
          { key: "a.double", value: { value: { case: "doubleValue", value: 0.5 } } },
          { key: "a.bytes", value: { value: { case: "bytesValue", value: hex("00ff10") } } },
          {
            key: "a.array",
            value: {
              value: {
                case: "arrayValue",
                value: { values: [{ value: { case: "stringValue", value: "x" } }] },
              },
            },
          },
          {
            key: "a.kvlist",
            value: { value: { case: "kvlistValue", value: { values: [str("k", "v")] } } },
          },
          str("a.string", "après"),
        ],
      },
    },
  },
  {
    name: "s2a-packages-available",
    schema: pb.ServerToAgentSchema,
    what:
      "ServerToAgent: an offer with the top-level collector package (file with download_url, " +
      "content_hash, the Sigstore bundle as signature, two headers) and an add-on package.",
    msg: {
      instanceUid: UID,
      capabilities: SERVER_CAPS,
      packagesAvailable: {
        packages: {
          "otelcol-contrib": {
            type: pb.PackageType.PackageType_TopLevel,
            version: "0.117.0",
            file: {
              downloadUrl: "https://artifacts.example/otelcol-contrib_0.117.0_linux_amd64.tar.gz",
              contentHash: CONTENT_HASH,
              signature: SIGNATURE,
              headers: {
                headers: [
                  { key: "Authorization", value: "Bearer artifact-token" },
                  { key: "X-Trace", value: "abc" },
                ],
              },
            },
            hash: OFFERED_HASH,
          },
          "addon-x": {
            type: pb.PackageType.PackageType_Addon,
            version: "1.0",
            file: { downloadUrl: "https://artifacts.example/addon-x-1.0.tar.gz" },
            hash: ADDON_HASH,
          },
        },
        allPackagesHash: ALL_HASH,
      },
    },
  },
  {
    name: "s2a-new-instance-uid",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: agent_identification with a new_instance_uid.",
    msg: { instanceUid: UID, agentIdentification: { newInstanceUid: NEW_UID } },
  },
  {
    name: "s2a-report-full-state",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: flags ReportFullState, with the server's capabilities.",
    msg: {
      instanceUid: UID,
      flags: BigInt(pb.ServerToAgentFlags.ServerToAgentFlags_ReportFullState),
      capabilities: SERVER_CAPS,
    },
  },
  {
    name: "s2a-error-unavailable",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: error_response Unavailable with retry_info (30 s in nanoseconds).",
    msg: {
      instanceUid: UID,
      errorResponse: {
        type: pb.ServerErrorResponseType.ServerErrorResponseType_Unavailable,
        errorMessage: "server is overloaded",
        Details: { case: "retryInfo", value: { retryAfterNanoseconds: 30000000000n } },
      },
    },
  },
  {
    name: "s2a-error-bad-request",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: error_response BadRequest without retry_info.",
    msg: {
      errorResponse: {
        type: pb.ServerErrorResponseType.ServerErrorResponseType_BadRequest,
        errorMessage: "sequence_num out of order",
      },
    },
  },
  {
    name: "s2a-heartbeat-setting",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: connection_settings.opamp.heartbeat_interval_seconds = 45.",
    msg: { instanceUid: UID, connectionSettings: { opamp: { heartbeatIntervalSeconds: 45n } } },
  },
  {
    name: "s2a-command-restart",
    schema: pb.ServerToAgentSchema,
    what: "ServerToAgent: command Restart (type 0: the command message is present but empty).",
    msg: { instanceUid: UID, command: { type: pb.CommandType.CommandType_Restart } },
  },
  {
    name: "s2a-unknown-fields",
    schema: pb.ServerToAgentSchema,
    what:
      "ServerToAgent: fields our .proto leaves out (remote_config, custom_capabilities, " +
      "custom_message; connection_settings.hash, own_metrics and opamp.destination_endpoint, " +
      "opamp.headers) around two we read: flags 3 and heartbeat_interval_seconds 60. Decoded only.",
    msg: {
      instanceUid: UID,
      remoteConfig: {
        config: {
          configMap: {
            "": { body: text("receivers: {}\n"), contentType: "text/yaml" },
          },
        },
        configHash: text("config-hash"),
      },
      connectionSettings: {
        hash: text("settings-hash"),
        opamp: {
          destinationEndpoint: "wss://opamp.example/v1/opamp",
          headers: { headers: [{ key: "Authorization", value: "Bearer new" }] },
          heartbeatIntervalSeconds: 60n,
        },
        ownMetrics: { destinationEndpoint: "https://otlp.example/v1/metrics" },
      },
      flags: BigInt(
        pb.ServerToAgentFlags.ServerToAgentFlags_ReportFullState |
          pb.ServerToAgentFlags.ServerToAgentFlags_ReportAvailableComponents,
      ),
      customCapabilities: { capabilities: ["io.example.custom"] },
      customMessage: { capability: "io.example.custom", type: "ping", data: text("hello") },
    },
  },
];

let differ = 0;
if (!check) mkdirSync(outDir, { recursive: true });
for (const c of cases) {
  const msg = create(c.schema, c.msg);
  const bin = Buffer.from(toBinary(c.schema, msg));
  const hexLines = bin.toString("hex").match(/.{1,64}/g)?.join("\n") ?? "";
  const txt =
    `${c.what}\n\n` +
    `Made by tests/interop/make-golden.mjs with the protobuf-es code of ` +
    `@elastic/opamp-client-node (upstream opamp.proto). ${bin.length} bytes:\n${hexLines}\n\n` +
    `As protobuf JSON (bytes in base64, 64-bit numbers as strings):\n` +
    `${toJsonString(c.schema, msg, { prettySpaces: 2 })}\n`;
  const binPath = path.join(outDir, `${c.name}.bin`);
  const txtPath = path.join(outDir, `${c.name}.txt`);
  if (check) {
    const same = (p, want) =>
      existsSync(p) && Buffer.compare(readFileSync(p), Buffer.from(want)) === 0;
    if (!same(binPath, bin)) {
      console.log(`differs: ${binPath}`);
      differ++;
    }
    if (!same(txtPath, txt)) {
      console.log(`differs: ${txtPath}`);
      differ++;
    }
  } else {
    writeFileSync(binPath, bin);
    writeFileSync(txtPath, txt);
    console.log(`${c.name}: ${bin.length} bytes`);
  }
}
if (check) {
  console.log(differ ? `${differ} golden file(s) differ` : `all ${cases.length} cases match`);
  process.exit(differ ? 1 : 0);
}
