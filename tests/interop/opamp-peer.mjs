// An OpAMP server we did not write the codec of: `ws` for WebSocket and the protobuf code that
// @elastic/opamp-client-node generated from the upstream opamp.proto (protobuf-es v2). It decodes
// every AgentToServer the updater's agent sends and checks the fields; it sends ServerToAgent
// messages (new_instance_uid, heartbeat setting, PackagesAvailable with signature and headers)
// that the agent must decode.
//
//   node opamp-peer.mjs PORT_FILE RESULT_FILE [EXPECTED_TOKEN]
//   MYR_PEER_RELEASE=FILE node opamp-peer.mjs PORT_FILE RESULT_FILE
//
// Writes the listening port to PORT_FILE, then, after the scripted exchange, RESULT_FILE as JSON:
// {"ok": bool, "failures": [...], "sent": {...what was offered...}, "received": [...]}.
// With MYR_PEER_RELEASE (JSON: url, sha256 hex, version, from = the version running before) the
// exchange is an install instead: the first report is answered with that release as a TopLevel
// package, and the peer follows the package statuses until Installed with agent_has_version =
// version (or InstallFailed, or the timeout).
import { createRequire } from "node:module";
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "package.json"));
const { WebSocketServer } = require("ws");
const { create, toBinary, fromBinary } = require("@bufbuild/protobuf");
const pb = require(
  path.join(here, "node_modules/@elastic/opamp-client-node/lib/generated/opamp_pb.js"),
);

const [portFile, resultFile, expectedToken] = process.argv.slice(2);
const failures = [];
const received = [];
const check = (cond, what) => {
  if (!cond) failures.push(what);
};
const hex = (u8) => Buffer.from(u8).toString("hex");
const attrs = (kvs) =>
  Object.fromEntries(
    kvs.map((kv) => [kv.key, kv.value?.value?.case === "stringValue" ? kv.value.value.value : null]),
  );

const NEW_UID = Uint8Array.from(Buffer.from("0190a6f46c1e7a3b9c2d0123456789ab", "hex"));
const CONTENT_HASH = Uint8Array.from(Buffer.alloc(32, 0x5a));
const SIGNATURE = Buffer.from(
  JSON.stringify({ mediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", x: "é✓" }),
);
const ALL_HASH = Uint8Array.from(Buffer.from("all-packages-hash-1"));
const PKG_HASH = Uint8Array.from(Buffer.from("package-hash-1"));
const expectedCaps =
  pb.AgentCapabilities.AgentCapabilities_ReportsStatus |
  pb.AgentCapabilities.AgentCapabilities_AcceptsPackages |
  pb.AgentCapabilities.AgentCapabilities_ReportsPackageStatuses |
  pb.AgentCapabilities.AgentCapabilities_ReportsHealth |
  pb.AgentCapabilities.AgentCapabilities_ReportsHeartbeat;

const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/v1/opamp" });
let firstUid = null;
let done = false;

function finish() {
  if (done) return;
  done = true;
  const out = {
    ok: failures.length === 0,
    failures,
    received,
    sent: release ? { ...release, all_packages_hash: hex(ALL_HASH), package_hash: hex(PKG_HASH) } : {
      new_instance_uid: hex(NEW_UID),
      content_hash: hex(CONTENT_HASH),
      signature: SIGNATURE.toString("utf8"),
      all_packages_hash: hex(ALL_HASH),
      package_hash: hex(PKG_HASH),
    },
  };
  writeFileSync(resultFile + ".tmp", JSON.stringify(out, null, 1));
  renameSync(resultFile + ".tmp", resultFile);
  wss.close();
  setTimeout(() => process.exit(0), 200);
}

const release = process.env.MYR_PEER_RELEASE
  ? JSON.parse(readFileSync(process.env.MYR_PEER_RELEASE, "utf8"))
  : null;

setTimeout(() => {
  failures.push(`timed out after ${received.length} message(s)`);
  finish();
}, release ? 60000 : 30000);

wss.on("listening", () => {
  writeFileSync(portFile + ".tmp", String(wss.address().port));
  renameSync(portFile + ".tmp", portFile);
});

const send = (ws, fields) =>
  ws.send(
    Buffer.concat([
      Buffer.from([0]),
      Buffer.from(toBinary(pb.ServerToAgentSchema, create(pb.ServerToAgentSchema, fields))),
    ]),
  );

const statusName = (code) => pb.PackageStatusEnum[code]?.replace("PackageStatusEnum_", "") ?? String(code);

// The install exchange: offer the release on the first report, then read every report's package
// status as the upstream schema decodes it.
function install(ws, msg, n, summary) {
  const ps = msg.packageStatuses;
  if (n === 1) {
    check(msg.agentDescription !== undefined, "#1 has agent_description");
    const non = attrs(msg.agentDescription?.nonIdentifyingAttributes ?? []);
    check(non["dev.myriarch.collector.version"] === release.from, `#1 collector.version ${non["dev.myriarch.collector.version"]}`);
    send(ws, {
      instanceUid: msg.instanceUid,
      capabilities: BigInt(
        pb.ServerCapabilities.ServerCapabilities_AcceptsStatus |
          pb.ServerCapabilities.ServerCapabilities_OffersPackages |
          pb.ServerCapabilities.ServerCapabilities_AcceptsPackagesStatus,
      ),
      packagesAvailable: {
        allPackagesHash: ALL_HASH,
        packages: {
          "otelcol-contrib": {
            type: pb.PackageType.PackageType_TopLevel,
            version: release.version,
            hash: PKG_HASH,
            file: {
              downloadUrl: release.url,
              contentHash: Uint8Array.from(Buffer.from(release.sha256, "hex")),
            },
          },
        },
      },
    });
    return;
  }
  const p = ps?.packages["otelcol-contrib"];
  if (!p) return;
  summary.package = {
    status: statusName(p.status),
    agent_has_version: p.agentHasVersion,
    server_offered_version: p.serverOfferedVersion,
    error_message: p.errorMessage,
  };
  if (p.status === pb.PackageStatusEnum.PackageStatusEnum_InstallFailed) {
    failures.push(`#${n} InstallFailed: ${p.errorMessage}`);
    return finish();
  }
  if (p.status !== pb.PackageStatusEnum.PackageStatusEnum_Installed) return;
  check(p.agentHasVersion === release.version, `#${n} Installed agent_has_version ${p.agentHasVersion}`);
  check(hex(p.agentHasHash) === hex(PKG_HASH), `#${n} agent_has_hash is the package hash`);
  check(p.serverOfferedVersion === release.version, `#${n} server_offered_version`);
  check(hex(ps.serverProvidedAllPackagesHash) === hex(ALL_HASH), `#${n} all_packages_hash echoed`);
  const non = attrs(msg.agentDescription?.nonIdentifyingAttributes ?? []);
  if (msg.agentDescription) {
    check(non["dev.myriarch.collector.version"] === release.version, `#${n} collector.version ${non["dev.myriarch.collector.version"]}`);
  }
  finish();
}

wss.on("connection", (ws, req) => {
  if (expectedToken !== undefined) {
    check(
      req.headers.authorization === `Bearer ${expectedToken}`,
      `Authorization header: ${req.headers.authorization}`,
    );
  }
  ws.on("message", (data, isBinary) => {
    check(isBinary, "message is binary");
    const buf = new Uint8Array(data);
    check(buf[0] === 0, `WebSocket header byte is 0 (got ${buf[0]})`);
    let msg;
    try {
      msg = fromBinary(pb.AgentToServerSchema, buf.subarray(1));
    } catch (e) {
      failures.push(`upstream schema cannot decode AgentToServer: ${e}`);
      return finish();
    }
    const n = received.length + 1;
    const summary = {
      n,
      instance_uid: hex(msg.instanceUid),
      sequence_num: Number(msg.sequenceNum),
      capabilities: Number(msg.capabilities),
      has_description: !!msg.agentDescription,
      has_health: !!msg.health,
      has_package_statuses: !!msg.packageStatuses,
      agent_disconnect: !!msg.agentDisconnect,
    };
    received.push(summary);
    check(msg.instanceUid.length === 16, `#${n} instance_uid is 16 bytes`);
    check(msg.sequenceNum === BigInt(n), `#${n} sequence_num ${msg.sequenceNum} == ${n}`);
    check(
      msg.capabilities === BigInt(expectedCaps),
      `#${n} capabilities ${msg.capabilities} == ${expectedCaps}`,
    );
    if (release) return install(ws, msg, n, summary);

    if (n === 1) {
      firstUid = msg.instanceUid;
      const d = msg.agentDescription;
      check(!!d, "#1 has agent_description");
      if (d) {
        const id = attrs(d.identifyingAttributes);
        const non = attrs(d.nonIdentifyingAttributes);
        summary.identifying = id;
        summary.non_identifying = non;
        check(id["service.name"] === "myriarch-updater", "#1 service.name");
        check(
          id["service.instance.id"]?.replaceAll("-", "") === hex(msg.instanceUid),
          "#1 service.instance.id matches instance_uid",
        );
        check(typeof id["service.version"] === "string", "#1 service.version");
        check(non["host.name"] === "pod-7", `#1 host.name ${non["host.name"]}`);
        check(non["os.type"] === "linux", "#1 os.type");
        check(!!non["host.arch"], "#1 host.arch");
        check(non["dev.myriarch.updater.install_method"] === "container", "#1 install_method");
        check(
          non["dev.myriarch.updater.image_collector_version"] === "0.115.0",
          "#1 image_collector_version",
        );
        check(non["dev.myriarch.collector.version"] === "0.116.0", "#1 collector.version");
      }
      check(msg.health?.healthy === true, "#1 health.healthy");
      check(msg.health?.status === "running", "#1 health.status");
      check(msg.health?.startTimeUnixNano > 0n, "#1 health.start_time_unix_nano");
      check(!!msg.packageStatuses, "#1 has package_statuses");

      const reply = create(pb.ServerToAgentSchema, {
        instanceUid: msg.instanceUid,
        capabilities: BigInt(
          pb.ServerCapabilities.ServerCapabilities_AcceptsStatus |
            pb.ServerCapabilities.ServerCapabilities_OffersPackages |
            pb.ServerCapabilities.ServerCapabilities_AcceptsPackagesStatus,
        ),
        agentIdentification: { newInstanceUid: NEW_UID },
        connectionSettings: { opamp: { heartbeatIntervalSeconds: 1n } },
        packagesAvailable: {
          allPackagesHash: ALL_HASH,
          packages: {
            "otelcol-contrib": {
              type: pb.PackageType.PackageType_TopLevel,
              version: "0.117.0",
              hash: PKG_HASH,
              file: {
                downloadUrl: "https://127.0.0.1:9443/artifacts/otelcol-contrib_0.117.0.tar.gz",
                contentHash: CONTENT_HASH,
                signature: Uint8Array.from(SIGNATURE),
                headers: {
                  headers: [
                    { key: "Authorization", value: "Bearer artifact-token" },
                    { key: "X-Trace", value: "abc" },
                  ],
                },
              },
            },
          },
        },
      });
      ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(toBinary(pb.ServerToAgentSchema, reply))]));
    } else if (n === 2) {
      check(hex(msg.instanceUid) === hex(NEW_UID), "#2 uses the new instance uid");
      const id = attrs(msg.agentDescription?.identifyingAttributes ?? []);
      check(
        id["service.instance.id"] === "0190a6f4-6c1e-7a3b-9c2d-0123456789ab",
        "#2 service.instance.id updated",
      );
      const ps = msg.packageStatuses;
      check(!!ps, "#2 has package_statuses");
      if (ps) {
        check(hex(ps.serverProvidedAllPackagesHash) === hex(ALL_HASH), "#2 all_packages_hash echoed");
        const p = ps.packages["otelcol-contrib"];
        check(!!p, "#2 status for otelcol-contrib");
        if (p) {
          summary.package = {
            status: p.status,
            error_message: p.errorMessage,
            server_offered_version: p.serverOfferedVersion,
          };
          check(p.status === pb.PackageStatusEnum.PackageStatusEnum_InstallFailed, "#2 InstallFailed");
          check(p.errorMessage === "installer not available", `#2 error_message ${p.errorMessage}`);
          check(p.serverOfferedVersion === "0.117.0", "#2 server_offered_version");
          check(hex(p.serverOfferedHash) === hex(PKG_HASH), "#2 server_offered_hash");
        }
      }
      check(!msg.health, "#2 carries no unchanged health");
    } else if (n === 3) {
      // The heartbeat at the interval the peer set (1 s): uid and sequence number only.
      check(hex(msg.instanceUid) === hex(NEW_UID), "#3 heartbeat uses the new uid");
      check(!msg.agentDescription && !msg.health && !msg.packageStatuses, "#3 is a bare heartbeat");
      // ReportFullState, encoded by the upstream schema, must bring everything back.
      const full = create(pb.ServerToAgentSchema, {
        instanceUid: NEW_UID,
        flags: BigInt(pb.ServerToAgentFlags.ServerToAgentFlags_ReportFullState),
      });
      ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(toBinary(pb.ServerToAgentSchema, full))]));
    } else if (n === 4) {
      check(!!msg.agentDescription && !!msg.health && !!msg.packageStatuses, "#4 is a full report");
      finish();
    }
  });
});
