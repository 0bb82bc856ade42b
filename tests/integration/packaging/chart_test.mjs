// The chart's rules, checked on what real helm renders (meson.build here runs one part per meson
// test):
//
//   node chart_test.mjs rules       every rule of container mode over a matrix of values, what
//                                   NOTES.txt says after `helm install`, and the default image
//                                   tags against the release tests/real/go.mod pins
//   node chart_test.mjs failures    what must not render: each failure and its message
//   node chart_test.mjs k8s         every rendered object against the Kubernetes API schemas,
//                                   and Pod Security "restricted" on every container
//   node chart_test.mjs validate    each rendered updater.yaml through `myriarch-updater validate`
//   node chart_test.mjs golden      two rendered examples against tests/integration/packaging/golden/
//                                   (MYR_UPDATE_GOLDEN=1 rewrites them)
//   node chart_test.mjs readme      the chart README's values table against the schema
//
// Environment: MYR_HELM (helm binary), MYRIARCH_SOURCE_DIR, MYRIARCH_BIN (for validate).
// Exit 0 when every check passed, 1 otherwise (each failure is printed), 77 when the npm packages
// are missing (test.sh installs them; a failed install is reported there).
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
let YAML;
let podSecurity;
try {
  YAML = await import("yaml");
} catch (e) {
  console.log(`MYR-SKIP: chart ${process.argv[2]}: npm packages missing in tests/integration/packaging (${e.code}); run npm install there`);
  process.exit(77);
}
podSecurity = await import("./pod_security.mjs");

const src = process.env.MYRIARCH_SOURCE_DIR || path.resolve(here, "../../..");
const chart = path.join(src, "packaging/helm/myriarch-collector");
const helm = process.env.MYR_HELM;
if (!helm) {
  console.error("MYR_HELM is not set: run through meson (tests/integration/packaging/run.sh finds helm)");
  process.exit(1);
}
const appVersion = YAML.parse(fs.readFileSync(path.join(chart, "Chart.yaml"), "utf8")).appVersion;
const trustedRootFile = path.join(here, "fixtures/trusted_root.json");
const trustedRoot = fs.readFileSync(trustedRootFile, "utf8");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "myr-chart-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));

// ---- a tiny harness: checks are counted, failures collected, nothing stops at the first one ----
let checks = 0;
const failures = [];
function check(cond, what) {
  checks++;
  if (!cond) failures.push(what);
  return cond;
}
function eq(actual, expected, what) {
  const ok = JSON.stringify(actual) === JSON.stringify(expected);
  return check(ok, `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

// ---- rendering ----
let valuesSeq = 0;
function valuesFile(values) {
  const f = path.join(tmp, `values-${++valuesSeq}.yaml`);
  fs.writeFileSync(f, YAML.stringify(values));
  return f;
}
function helmArgs({ files = [], values = {}, setFile = {} } = {}) {
  const args = ["template", "r", chart, "--namespace", "observability"];
  for (const f of files) args.push("-f", path.join(here, "values", f));
  if (Object.keys(values).length) args.push("-f", valuesFile(values));
  for (const [k, v] of Object.entries(setFile)) args.push("--set-file", `${k}=${v}`);
  return args;
}
function renderText(opts) {
  const r = spawnSync(helm, helmArgs(opts), { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`helm template failed (${JSON.stringify(opts)}):\n${r.stderr}`);
  return r.stdout;
}
function render(opts) {
  const docs = YAML.parseAllDocuments(renderText(opts)).map((d) => d.toJS()).filter(Boolean);
  return new Rendered(docs);
}
function renderFailure(opts) {
  const r = spawnSync(helm, helmArgs(opts), { encoding: "utf8" });
  return { status: r.status, stderr: r.stderr };
}

class Rendered {
  constructor(docs) {
    this.docs = docs;
  }
  all(kind) {
    return this.docs.filter((d) => d.kind === kind);
  }
  one(kind, name) {
    const found = this.docs.filter((d) => d.kind === kind && (!name || d.metadata.name === name));
    if (found.length !== 1) throw new Error(`expected one ${kind} ${name || ""}, found ${found.length}`);
    return found[0];
  }
  get workload() {
    const w = this.docs.filter((d) => ["Deployment", "DaemonSet", "StatefulSet"].includes(d.kind));
    if (w.length !== 1) throw new Error(`expected one workload, found ${w.length}`);
    return w[0];
  }
  get pod() {
    return this.workload.spec.template.spec;
  }
  container(name) {
    const c = [...(this.pod.initContainers || []), ...this.pod.containers].find((x) => x.name === name);
    if (!c) throw new Error(`no container ${name}`);
    return c;
  }
  // The ConfigMap key that a container sees at a path, through the pod's configMap volumes.
  fileAt(containerName, file) {
    const c = this.container(containerName);
    for (const m of c.volumeMounts || []) {
      if (!file.startsWith(m.mountPath + "/")) continue;
      const rel = file.slice(m.mountPath.length + 1);
      const vol = this.pod.volumes.find((v) => v.name === m.name);
      if (!vol || !vol.configMap) continue;
      const item = (vol.configMap.items || []).find((i) => i.path === rel);
      const key = item ? item.key : rel;
      const cm = this.docs.find((d) => d.kind === "ConfigMap" && d.metadata.name === vol.configMap.name);
      return { configMap: vol.configMap.name, key, data: cm ? cm.data[key] : undefined, mount: m };
    }
    return undefined;
  }
  configYaml(key) {
    const cm = this.one("ConfigMap", "r-myriarch-collector");
    return YAML.parse(cm.data[key]);
  }
}

const durationMs = (d) => {
  let ms = 0;
  for (const [, n, unit] of String(d).matchAll(/([0-9]+)(ms|h|m|s)/g))
    ms += Number(n) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[unit];
  return ms;
};
const portOf = (hostPort) => Number(String(hostPort).split(":").pop());
const urlPort = (u) => Number(new URL(u).port);

// The matrix of container-mode renders: name -> helm options (and what the rules expect).
const trustedRootSet = { "containerMode.trustedRoot.json": trustedRootFile };
const matrix = {
  standard: { files: ["container-standard.yaml"], setFile: trustedRootSet },
  openshift: {
    files: ["container-standard.yaml"],
    values: { containerMode: { securityProfile: "openshift" } },
    setFile: trustedRootSet,
  },
  "verification-off": {
    files: ["container-standard.yaml"],
    values: { containerMode: { requireSignature: false } },
  },
  "trusted-root-configmap": {
    files: ["container-standard.yaml"],
    values: { containerMode: { trustedRoot: { configMap: "sigstore-trusted-root" } } },
  },
  "custom-grace": {
    files: ["container-standard.yaml"],
    values: { containerMode: { stopTimeout: "2m", healthTimeout: "5m", graceMargin: "90s" } },
    setFile: trustedRootSet,
  },
  "custom-ports": {
    files: ["container-standard.yaml"],
    values: {
      containerMode: { healthPort: 14135, supervisorHealthPort: 24233 },
      collectorHealthPort: 14133,
    },
    setFile: trustedRootSet,
  },
  "ids-overridden": {
    files: ["container-standard.yaml"],
    values: { podSecurityContext: { runAsUser: 20000, runAsGroup: null } },
    setFile: trustedRootSet,
  },
  "stop-term": {
    files: ["container-standard.yaml"],
    values: { containerMode: { stopSignal: "TERM", stopTimeout: "5s" } },
    setFile: trustedRootSet,
  },
  // Artifacts from a mirror and an in-cluster store: http:// needs allowInsecureTransport to be used.
  "download-mirror": {
    files: ["container-standard.yaml"],
    values: {
      server: { allowInsecureTransport: true },
      containerMode: {
        allowedDownloadPrefixes: ["https://mirror.example.com/otelcol/", "http://10.0.0.5:8080/artifacts/"],
      },
    },
    setFile: trustedRootSet,
  },
  "openshift-noverify": { files: ["container-openshift-noverify.yaml"] },
  "service-monitor": {
    files: ["container-standard.yaml"],
    values: { metrics: { serviceMonitor: { enabled: true, interval: "15s", labels: { release: "kube-prometheus" } } } },
    setFile: trustedRootSet,
  },
  "metrics-off": {
    files: ["container-standard.yaml"],
    values: { metrics: { enabled: false } },
    setFile: trustedRootSet,
  },
  "updater-tag-pinned": {
    files: ["container-standard.yaml"],
    values: { images: { updater: { tag: "9.9.9" } }, resources: { limits: { memory: "1Gi" } } },
    setFile: trustedRootSet,
  },
  "config-merged": {
    files: ["container-standard.yaml"],
    values: {
      config: {
        extensions: { pprof: {} },
        service: { extensions: ["pprof"] },
      },
    },
    setFile: trustedRootSet,
  },
};
const plainMatrix = {
  "plain-deployment": { values: { mode: "deployment" } },
  "plain-daemonset": { values: { mode: "daemonset" } },
  "plain-statefulset": { values: { mode: "statefulset" } },
};

// Values as the chart sees them after merging (only the keys the rules read).
function effectiveValues(opts) {
  const merged = YAML.parse(fs.readFileSync(path.join(chart, "values.yaml"), "utf8"));
  const layers = [
    ...(opts.files || []).map((f) => YAML.parse(fs.readFileSync(path.join(here, "values", f), "utf8"))),
    opts.values || {},
  ];
  const mergeInto = (dst, s) => {
    for (const [k, v] of Object.entries(s)) {
      if (v === null) delete dst[k];
      else if (v && typeof v === "object" && !Array.isArray(v) && dst[k] && typeof dst[k] === "object")
        mergeInto(dst[k], v);
      else dst[k] = v;
    }
  };
  for (const l of layers) mergeInto(merged, l);
  return merged;
}

// ------------------------------------------------------------------------------------------------
function rulesFor(name, opts) {
  const r = render(opts);
  const v = effectiveValues(opts);
  const cm = v.containerMode;
  const at = `[${name}]`;
  const sts = r.workload;
  eq(sts.kind, "StatefulSet", `${at} container mode renders a StatefulSet`);
  const headless = r.one("Service", sts.spec.serviceName);
  eq(headless.spec.clusterIP, "None", `${at} serviceName names a headless Service`);
  const pod = r.pod;

  // Volumes: the shared emptyDir, read-only in the main container; two claim templates.
  const vol = (n) => pod.volumes.find((x) => x.name === n);
  check(vol("shared") && vol("shared").emptyDir, `${at} volume shared is an emptyDir`);
  const main = r.container("collector");
  const mount = (c, n) => (c.volumeMounts || []).find((m) => m.name === n);
  eq(mount(main, "shared") && mount(main, "shared").readOnly, true, `${at} /shared is read-only in the main container`);
  eq(sts.spec.volumeClaimTemplates.map((t) => t.metadata.name).sort(), ["binaries", "supervisor-storage"],
    `${at} volumeClaimTemplates`);
  for (const t of sts.spec.volumeClaimTemplates) {
    check(!vol(t.metadata.name), `${at} claim ${t.metadata.name} is not also a pod volume`);
    eq(t.spec.accessModes, ["ReadWriteOnce"], `${at} claim ${t.metadata.name} is ReadWriteOnce`);
  }
  eq(mount(main, "binaries") && mount(main, "binaries").mountPath, "/var/lib/myriarch", `${at} binaries claim mount`);
  check(!(mount(main, "binaries") || {}).readOnly, `${at} binaries claim is writable`);
  eq(mount(main, "supervisor-storage") && mount(main, "supervisor-storage").mountPath, "/var/lib/otelcol/supervisor",
    `${at} supervisor storage claim mount`);

  // Init containers: the updater image installs itself; the collector image's binary is copied.
  const inits = pod.initContainers || [];
  eq(inits.map((c) => c.name), ["install-updater", "seed-collector"], `${at} init containers in order`);
  const img = (i) => `${v.images[i].repository}:${v.images[i].tag || appVersion}`;
  eq(inits[0].image, img("updater"), `${at} install-updater runs the updater image`);
  eq(inits[0].command, ["/usr/local/bin/myriarch-updater", "install-self", "/shared"], `${at} install-self command`);
  eq(inits[1].image, img("collector"), `${at} seed-collector runs the collector image`);
  eq(inits[1].command, ["/shared/myriarch-updater", "copy", "/otelcol-contrib", "/shared/"], `${at} copy command`);
  for (const c of inits) {
    const m = mount(c, "shared");
    check(m && m.mountPath === "/shared" && !m.readOnly, `${at} ${c.name} writes /shared`);
  }

  // Main container: the supervisor image, the updater from the shared volume as PID 1.
  eq(main.image, img("supervisor"), `${at} main container runs the supervisor image`);
  eq(main.command.slice(0, 3), ["/shared/myriarch-updater", "container", "--config"], `${at} main command`);
  const updaterFile = r.fileAt("collector", main.command[3]);
  check(updaterFile && updaterFile.data, `${at} --config ${main.command[3]} is a mounted ConfigMap key`);
  const upd = YAML.parse(updaterFile.data);

  // Probes on healthPort: /healthz for startup and liveness, /readyz for readiness.
  const portNamed = (n) => (typeof n === "number" ? n : main.ports.find((p) => p.name === n).containerPort);
  for (const [probe, p] of [["startupProbe", "/healthz"], ["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
    const pr = main[probe];
    check(pr && pr.httpGet, `${at} ${probe} is an httpGet`);
    if (!pr) continue;
    eq(pr.httpGet.path, p, `${at} ${probe} path`);
    eq(portNamed(pr.httpGet.port), cm.healthPort, `${at} ${probe} port is containerMode.healthPort`);
  }
  eq(upd.container.healthListen, `0.0.0.0:${cm.healthPort}`, `${at} updater healthListen on healthPort`);

  // Grace period: 2 x stopTimeout + 2 x healthTimeout + margin, rounded up, never below 360.
  const grace = Math.max(360, Math.ceil((2 * durationMs(cm.stopTimeout) + 2 * durationMs(cm.healthTimeout) +
    durationMs(cm.graceMargin)) / 1000));
  eq(pod.terminationGracePeriodSeconds, grace, `${at} terminationGracePeriodSeconds`);
  check(pod.terminationGracePeriodSeconds >= 360, `${at} grace period at least 360`);
  eq(upd.container.stopTimeout, cm.stopTimeout, `${at} updater stopTimeout from values`);
  eq(upd.container.stopSignal, cm.stopSignal, `${at} updater stopSignal from values`);
  if (cm.stopSignal === "INT")
    check(durationMs(cm.stopTimeout) > 10000, `${at} stopTimeout leaves the supervisor its 10 s after INT`);
  eq(upd.update.healthTimeout, cm.healthTimeout, `${at} updater healthTimeout from values`);
  eq(upd.update.allowedDownloadPrefixes, cm.allowedDownloadPrefixes, `${at} updater allowedDownloadPrefixes from values`);

  // updater.yaml against the mounts and the init containers.
  eq(upd.server.endpoint, v.server.endpoint, `${at} updater endpoint`);
  eq(upd.collector.activation, "symlink", `${at} activation symlink`);
  check(upd.collector.installDir.startsWith("/var/lib/myriarch/"), `${at} installDir on the binaries claim`);
  check(upd.collector.stateDir.startsWith("/var/lib/myriarch/"), `${at} stateDir on the binaries claim`);
  eq(upd.container.seedBinary, "/shared/" + path.basename(inits[1].command[2]), `${at} seedBinary is what seed-collector copies`);
  eq(upd.container.supervisorCommand[0], "/usr/local/bin/opampsupervisor", `${at} supervisorCommand runs the image's supervisor`);
  const supArg = upd.container.supervisorCommand.find((a) => a.startsWith("--config="));
  const supFile = supArg && r.fileAt("collector", supArg.slice("--config=".length));
  check(supFile && supFile.data, `${at} the supervisor's --config is a mounted ConfigMap key`);
  const sup = YAML.parse(supFile.data);
  eq(sup.agent.executable, `${upd.collector.installDir}/current/${upd.collector.binary}`, `${at} agent.executable`);
  eq(sup.storage.directory, upd.supervisor.storageDir, `${at} supervisor storage = updater's storageDir`);
  eq(sup.storage.directory, mount(main, "supervisor-storage").mountPath, `${at} supervisor storage on its claim`);
  eq(upd.collector.configFile, `${sup.storage.directory}/effective.yaml`, `${at} preflight validates effective.yaml`);
  eq(portOf(sup.healthcheck.endpoint), cm.supervisorHealthPort, `${at} supervisor healthcheck.endpoint port`);
  eq(urlPort(upd.supervisor.healthUrl), cm.supervisorHealthPort, `${at} updater checks the supervisor's port`);
  eq(new URL(upd.supervisor.healthUrl).pathname, "/health", `${at} supervisor health path`);
  eq(sup.server.endpoint, v.server.endpoint, `${at} supervisor endpoint = updater endpoint`);

  // The collector base config enables health_check on the port the updater checks.
  const baseFiles = sup.agent.config_files || [];
  eq(baseFiles.length, 1, `${at} one base config file`);
  const baseFile = r.fileAt("collector", baseFiles[0]);
  check(baseFile && baseFile.data, `${at} the base config is a mounted ConfigMap key`);
  const base = YAML.parse(baseFile.data);
  check(base.service.extensions.includes("health_check"), `${at} base config enables health_check`);
  eq(portOf(base.extensions.health_check.endpoint), v.collectorHealthPort, `${at} health_check port`);
  eq(urlPort(upd.collector.healthUrl), v.collectorHealthPort, `${at} updater checks the collector's port`);

  // The enrollment token: one source for both.
  if (v.server.enrollmentToken.secretName) {
    const env = (main.env || []).find((e) => e.name === upd.server.enrollmentTokenEnv);
    check(env && env.valueFrom.secretKeyRef.name === v.server.enrollmentToken.secretName,
      `${at} ${upd.server.enrollmentTokenEnv} comes from the Secret`);
    eq(sup.server.headers.Authorization, [`Bearer \${env:${upd.server.enrollmentTokenEnv}}`],
      `${at} the supervisor's token is the same variable`);
  }
  // The proxy: the updater's network.proxy and the variables the supervisor reads name the same
  // proxy; its credentials come from the Secret, never from the values.
  if (v.proxy && v.proxy.url) {
    const envOf = (n) => (main.env || []).find((e) => e.name === n);
    const p = (upd.network || {}).proxy || {};
    eq(p.url, v.proxy.url, `${at} network.proxy.url`);
    eq(p.noProxy, v.proxy.noProxy, `${at} network.proxy.noProxy`);
    eq((envOf("NO_PROXY") || {}).value, v.proxy.noProxy.join(","), `${at} NO_PROXY`);
    for (const name of ["HTTPS_PROXY", "HTTP_PROXY"]) {
      const e = envOf(name);
      check(e && new URL(e.value).host === new URL(v.proxy.url).host, `${at} ${name} is proxy.url`);
    }
    if (v.proxy.existingSecret) {
      const creds = envOf(p.credentialsEnv);
      check(creds && creds.valueFrom.secretKeyRef.name === v.proxy.existingSecret,
        `${at} ${p.credentialsEnv} comes from proxy.existingSecret`);
      check(envOf("HTTPS_PROXY").value.includes(`$(${p.credentialsEnv})@`),
        `${at} the supervisor's HTTPS_PROXY carries the same credentials`);
    }
  }
  if (v.server.caConfigMap) {
    const ca = r.fileAt("collector", upd.server.caFile);
    eq(ca && ca.configMap, v.server.caConfigMap, `${at} caFile comes from server.caConfigMap`);
    eq(sup.server.tls.ca_file, upd.server.caFile, `${at} the supervisor trusts the same CA`);
  }

  // Sigstore trusted root.
  const requireSig = cm.requireSignature !== false;
  eq(upd.update.requireSignature, requireSig, `${at} requireSignature`);
  const rootCms = r.all("ConfigMap").filter((c) => c.data && "trusted_root.json" in c.data);
  if (requireSig) {
    const root = r.fileAt("collector", upd.update.trustedRootFile);
    check(root, `${at} trustedRootFile ${upd.update.trustedRootFile} is mounted`);
    if (cm.trustedRoot.configMap) {
      eq(root && root.configMap, cm.trustedRoot.configMap, `${at} the named trusted-root ConfigMap is mounted`);
      eq(rootCms.length, 0, `${at} no trusted-root ConfigMap rendered for an existing one`);
    } else {
      eq(root && root.data, trustedRoot, `${at} trusted root content as given`);
    }
  } else {
    eq(rootCms.length, 0, `${at} no trusted-root ConfigMap with verification off`);
    check(!mount(main, "trusted-root"), `${at} no trusted-root mount with verification off`);
  }

  // Security: profile IDs, then Pod Security "restricted" on every container.
  const psc = pod.securityContext;
  const ids = ["runAsUser", "runAsGroup", "fsGroup"];
  if (cm.securityProfile === "openshift") {
    for (const k of ids) check(!(k in psc), `${at} openshift leaves ${k} to the SCC`);
  } else {
    for (const k of ids) {
      const want = v.podSecurityContext[k];
      if (want === undefined) check(!(k in psc), `${at} null leaves ${k} out`);
      else eq(psc[k], want, `${at} pod ${k}`);
    }
  }
  for (const problem of podSecurity.restrictedProblems(pod)) check(false, `${at} ${problem}`);
  monitoringRules(at, r, v, main, upd);
  for (const c of [...inits, ...pod.containers])
    eq(c.securityContext.readOnlyRootFilesystem, true, `${at} ${c.name} has a read-only root file system`);
  eq(pod.automountServiceAccountToken, false, `${at} no service account token`);
  return r;
}

// What an operator watches: the termination message, the resources, the metrics' annotations and
// the ServiceMonitor.
function monitoringRules(at, r, v, main, upd) {
  const cm = v.containerMode;
  eq(main.terminationMessagePolicy, "FallbackToLogsOnError", `${at} terminationMessagePolicy`);
  eq(upd.container.terminationMessagePath, main.terminationMessagePath,
    `${at} the updater writes where the kubelet reads the termination message`);
  const res = main.resources || {};
  eq([res.requests, res.limits], [v.resources.requests, v.resources.limits], `${at} main container resources from values`);
  check(!(res.limits || {}).cpu, `${at} no CPU limit on PID 1`);
  const ann = r.workload.spec.template.metadata.annotations || {};
  if (v.metrics.enabled) {
    eq([ann["prometheus.io/scrape"], ann["prometheus.io/port"], ann["prometheus.io/path"]],
      ["true", String(cm.healthPort), "/metrics"], `${at} prometheus.io annotations on healthPort`);
    eq(portOf(upd.container.healthListen), Number(ann["prometheus.io/port"]), `${at} the annotated port is the updater's`);
  } else {
    check(!Object.keys(ann).some((k) => k.startsWith("prometheus.io/")), `${at} no prometheus.io annotations with metrics off`);
  }
  const monitors = r.all("ServiceMonitor");
  if (!v.metrics.serviceMonitor.enabled) return eq(monitors.length, 0, `${at} no ServiceMonitor unless enabled`);
  eq(monitors.length, 1, `${at} one ServiceMonitor`);
  const sm = monitors[0];
  const selected = r.all("Service").filter((svc) =>
    Object.entries(sm.spec.selector.matchLabels).every(([k, val]) => (svc.metadata.labels || {})[k] === val));
  eq(selected.map((svc) => svc.metadata.name), [r.workload.spec.serviceName], `${at} the ServiceMonitor selects the headless Service`);
  const ep = sm.spec.endpoints[0];
  const svcPort = selected.length ? selected[0].spec.ports.find((p) => p.name === ep.port) : undefined;
  check(svcPort && svcPort.targetPort === "updater-health", `${at} endpoint port ${ep.port} reaches updater-health`);
  eq([ep.path, ep.interval], ["/metrics", v.metrics.serviceMonitor.interval], `${at} endpoint path and interval`);
  for (const [k, val] of Object.entries(v.metrics.serviceMonitor.labels)) eq(sm.metadata.labels[k], val, `${at} label ${k}`);
}

// The default supervisor and collector tags are the upstream release the real-peer tests build
// (one pin: tests/real/go.mod, read by tests/real/upstream-release.sh); the updater's is the
// chart's appVersion.
function defaultTagRules() {
  const release = execFileSync("bash", [path.join(src, "tests/real/upstream-release.sh")], { encoding: "utf8" }).trim();
  const values = YAML.parse(fs.readFileSync(path.join(chart, "values.yaml"), "utf8"));
  for (const i of ["supervisor", "collector"])
    eq(String(values.images[i].tag), release, `values.yaml images.${i}.tag is the release tests/real/go.mod pins`);
  eq(values.images.updater.tag, "", "values.yaml images.updater.tag is empty (the chart's appVersion)");
  const std = render(matrix.standard);
  eq(std.container("install-updater").image, `ghcr.io/myriarch/myriarch-updater:${appVersion}`,
    "[standard] the updater image is the chart's appVersion");
  eq(std.container("collector").image, `otel/opentelemetry-collector-opampsupervisor:${release}`,
    "[standard] the supervisor image runs the tested release");
  eq(render(matrix["updater-tag-pinned"]).container("install-updater").image, "ghcr.io/myriarch/myriarch-updater:9.9.9",
    "[updater-tag-pinned] a tag given wins over appVersion");
  // The health URL the updater checks by default (config.md: supervisor.healthUrl) is the one the
  // chart renders, on the supervisor's healthcheck endpoint that release serves (real_chart_test).
  eq(std.configYaml("updater.yaml").supervisor.healthUrl, "http://127.0.0.1:23233/health",
    "[standard] supervisor.healthUrl is the updater's default");
  eq(portOf(std.configYaml("supervisor.yaml").healthcheck.endpoint), 23233,
    "[standard] the supervisor's healthcheck.endpoint serves it");
}

function partRules() {
  defaultTagRules();
  for (const [name, opts] of Object.entries(matrix)) {
    try {
      rulesFor(name, opts);
    } catch (e) {
      check(false, `[${name}] ${e.message}`);
    }
  }
  // Values that the matrix pins down precisely.
  const std = render(matrix.standard);
  eq(std.pod.terminationGracePeriodSeconds, 360, "[standard] the defaults give 360 s");
  eq(render(matrix["custom-grace"]).pod.terminationGracePeriodSeconds, 930, "[custom-grace] 2x2m + 2x5m + 90s = 930 s");
  eq(std.configYaml("updater.yaml").container.stopSignal, "INT",
    "[standard] the upstream supervisor gets INT by default (it stops in order only on SIGINT)");
  eq(render(matrix["stop-term"]).configYaml("updater.yaml").container.stopSignal, "TERM",
    "[stop-term] stopSignal TERM renders TERM");
  eq(render({ ...matrix.standard, values: { containerMode: { stopTimeout: "11s" } } })
    .configYaml("updater.yaml").container.stopTimeout, "11s", "[standard] INT with stopTimeout 11s renders");
  eq(std.configYaml("updater.yaml").update.allowedDownloadPrefixes, [],
    "[standard] allowedDownloadPrefixes [] by default (the endpoint's artifact path)");
  eq(render(matrix["download-mirror"]).configYaml("updater.yaml").update.allowedDownloadPrefixes,
    ["https://mirror.example.com/otelcol/", "http://10.0.0.5:8080/artifacts/"],
    "[download-mirror] allowedDownloadPrefixes as given, in order");
  eq(std.pod.securityContext.runAsUser, 10001, "[standard] runAsUser 10001");
  eq(std.pod.securityContext.fsGroup, 10001, "[standard] fsGroup 10001");
  const ids = render(matrix["ids-overridden"]).pod.securityContext;
  eq([ids.runAsUser, "runAsGroup" in ids, ids.fsGroup], [20000, false, 10001], "[ids-overridden] override, null, default");
  const os_ = render({ ...matrix.openshift, values: { containerMode: { securityProfile: "openshift" },
    podSecurityContext: { runAsUser: 1234 } } }).pod.securityContext;
  check(!("runAsUser" in os_), "[openshift] a runAsUser value is still left to the SCC");
  const merged = render(matrix["config-merged"]).configYaml("collector.yaml");
  eq(merged.service.extensions.sort(), ["health_check", "pprof"], "[config-merged] health_check stays next to pprof");
  // NOTES.txt, as `helm install` prints it: the grace period, the profile, the warning when
  // verification is off, and nothing of container mode outside it.
  const notes = (opts) => {
    const args = helmArgs(opts);
    args.splice(0, 2, "install", "r");
    const r = spawnSync(helm, [...args, "--dry-run=client"], { encoding: "utf8" });
    return r.status === 0 ? r.stdout.slice(r.stdout.indexOf("NOTES:")) : `helm install --dry-run failed: ${r.stderr}`;
  };
  const n1 = notes(matrix.standard);
  check(/terminationGracePeriodSeconds: 360 /.test(n1) && /Security profile: standard\./.test(n1) && !/WARNING/.test(n1),
    `[standard] NOTES: grace 360, profile, no warning:\n${n1}`);
  const n2 = notes(matrix["verification-off"]);
  check(/WARNING: containerMode\.requireSignature is false/.test(n2), `[verification-off] NOTES warn:\n${n2}`);
  const n3 = notes(matrix["custom-grace"]);
  check(/terminationGracePeriodSeconds: 930 /.test(n3), `[custom-grace] NOTES: grace 930:\n${n3}`);
  const n4 = notes(plainMatrix["plain-daemonset"]);
  check(/the collector as a daemonset/.test(n4) && !/container mode/.test(n4), `[plain-daemonset] NOTES:\n${n4}`);
  // Outside container mode: the three kinds, no init containers, no claims.
  for (const [name, opts] of Object.entries(plainMatrix)) {
    const r = render(opts);
    eq(r.workload.kind, { "plain-deployment": "Deployment", "plain-daemonset": "DaemonSet",
      "plain-statefulset": "StatefulSet" }[name], `[${name}] kind`);
    check(!r.pod.initContainers, `[${name}] no init containers`);
    check(!r.workload.spec.volumeClaimTemplates, `[${name}] no claims`);
    eq(r.container("collector").command[0], "/otelcol-contrib", `[${name}] runs the collector`);
    for (const problem of podSecurity.restrictedProblems(r.pod)) check(false, `[${name}] ${problem}`);
    check(!r.all("ConfigMap").some((c) => "updater.yaml" in (c.data || {})), `[${name}] no updater.yaml`);
  }
}

// ------------------------------------------------------------------------------------------------
function partFailures() {
  const base = { files: ["container-standard.yaml"], setFile: trustedRootSet };
  const cases = [
    ["missing trusted root", { files: ["container-standard.yaml"] },
      /Sigstore trusted root.*containerMode\.trustedRoot\.json.*containerMode\.requireSignature=false/s],
    ["requireSignature removed with null keeps verification on", { files: ["container-standard.yaml"],
      values: { containerMode: { requireSignature: null } } }, /Sigstore trusted root/],
    ["both trusted root kinds", { ...base, values: { containerMode: { trustedRoot: { configMap: "x" } } } },
      /only one of containerMode\.trustedRoot\.json and containerMode\.trustedRoot\.configMap/],
    ["trusted root that is not JSON", { files: ["container-standard.yaml"],
      values: { containerMode: { trustedRoot: { json: "{not json" } } } }, /trusted-root\.yaml/],
    ["no signer identity", { ...base, values: { containerMode: { signerIdentity: { subjectRegexp: "" } } } },
      /exactly one of containerMode\.signerIdentity\.subject/],
    ["two signer identities", { ...base, values: { containerMode: { signerIdentity: { subject: "a@b" } } } },
      /exactly one of containerMode\.signerIdentity\.subject/],
    ["deployment in container mode", { ...base, values: { mode: "deployment" } },
      /containerMode\.enabled needs mode: statefulset, not "deployment"/],
    ["daemonset in container mode", { ...base, values: { mode: "daemonset" } },
      /containerMode\.enabled needs mode: statefulset, not "daemonset".*DaemonSet cannot have claim templates/s],
    ["no endpoint", { ...base, values: { server: { endpoint: "" } } }, /server\.endpoint is required in container mode/],
    ["plain ws:// off the machine", { ...base, values: { server: { endpoint: "ws://myriarchd:4320/v1/opamp" } } },
      /plain ws:\/\/ to a host that is not loopback/],
    ["schema: unknown top-level key", { ...base, values: { replicas: 2 } }, /additional properties 'replicas' not allowed/],
    ["schema: misspelt requireSignature", { ...base, values: { containerMode: { requireSignatre: false } } },
      /\/containerMode.*additional properties 'requireSignatre' not allowed/],
    ["schema: unknown image key", { ...base, values: { images: { updater: { digest: "sha256:x" } } } },
      /\/images\/updater.*additional properties 'digest' not allowed/],
    ["schema: requireSignature as a string", { ...base, values: { containerMode: { requireSignature: "false" } } },
      /\/containerMode\/requireSignature.*got string, want boolean/],
    ["stopTimeout under 11s with stopSignal INT", { ...base, values: { containerMode: { stopTimeout: "10s" } } },
      /containerMode\.stopTimeout "10s" is too short for stopSignal INT.*11s or more/s],
    ["stopTimeout 10999ms with stopSignal INT", { ...base,
      values: { containerMode: { stopSignal: "INT", stopTimeout: "10s999ms" } } }, /too short for stopSignal INT/],
    ["schema: unknown stopSignal", { ...base, values: { containerMode: { stopSignal: "HUP" } } },
      /\/containerMode\/stopSignal.*value must be one of/],
    ["schema: stopSignal in lower case", { ...base, values: { containerMode: { stopSignal: "int" } } },
      /\/containerMode\/stopSignal.*value must be one of/],
    ["schema: stopTimeout without a unit", { ...base, values: { containerMode: { stopTimeout: 30 } } },
      /\/containerMode\/stopTimeout.*got number, want string/],
    ["schema: stopTimeout with a fraction", { ...base, values: { containerMode: { stopTimeout: "1.5s" } } },
      /\/containerMode\/stopTimeout.*does not match pattern/],
    ["schema: healthPort as a string", { ...base, values: { containerMode: { healthPort: "13135" } } },
      /\/containerMode\/healthPort.*got string, want integer/],
    ["schema: port out of range", { ...base, values: { containerMode: { healthPort: 70000 } } },
      /\/containerMode\/healthPort.*maximum/],
    ["schema: unknown profile", { ...base, values: { containerMode: { securityProfile: "restricted" } } },
      /\/containerMode\/securityProfile.*value must be one of/],
    ["schema: unknown mode", { ...base, values: { mode: "job" } }, /\/mode.*value must be one of/],
    ["schema: ftp:// download prefix", { ...base, values: { containerMode: { allowedDownloadPrefixes: ["ftp://x/"] } } },
      /\/containerMode\/allowedDownloadPrefixes\/0.*does not match pattern/],
    ["schema: download prefixes as a string", { ...base,
      values: { containerMode: { allowedDownloadPrefixes: "https://mirror.example.com/" } } },
      /\/containerMode\/allowedDownloadPrefixes.*got string, want array/],
    ["schema: runAsUser 0", { ...base, values: { podSecurityContext: { runAsUser: 0 } } },
      /\/podSecurityContext\/runAsUser.*minimum/],
    ["ServiceMonitor with metrics off", { ...base, values: { metrics: { enabled: false, serviceMonitor: { enabled: true } } } },
      /metrics\.serviceMonitor\.enabled needs metrics\.enabled/],
    ["ServiceMonitor outside container mode", { values: { metrics: { serviceMonitor: { enabled: true } } } },
      /metrics\.serviceMonitor\.enabled needs containerMode\.enabled/],
    ["schema: ServiceMonitor interval without a unit", { ...base,
      values: { metrics: { serviceMonitor: { enabled: true, interval: 30 } } } },
      /\/metrics\/serviceMonitor\/interval.*got number, want string/],
  ];
  for (const [name, opts, want] of cases) {
    const r = renderFailure(opts);
    if (check(r.status !== 0, `[${name}] must not render`))
      check(want.test(r.stderr), `[${name}] message ${want}, got: ${r.stderr.trim().slice(0, 400)}`);
  }
}

// ------------------------------------------------------------------------------------------------
async function partK8s() {
  const models = {
    "v1/ConfigMap": "kubernetes-models/v1/ConfigMap",
    "v1/Service": "kubernetes-models/v1/Service",
    "v1/ServiceAccount": "kubernetes-models/v1/ServiceAccount",
    "apps/v1/StatefulSet": "kubernetes-models/apps/v1/StatefulSet",
    "apps/v1/Deployment": "kubernetes-models/apps/v1/Deployment",
    "apps/v1/DaemonSet": "kubernetes-models/apps/v1/DaemonSet",
    "monitoring.coreos.com/v1/ServiceMonitor": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
  };
  let objects = 0;
  for (const [name, opts] of Object.entries({ ...matrix, ...plainMatrix })) {
    for (const doc of render(opts).docs) {
      const key = `${doc.apiVersion}/${doc.kind}`;
      if (!check(models[key], `[${name}] ${key} has a schema here`)) continue;
      const mod = await import(models[key]);
      const Model = mod[doc.kind];
      try {
        new Model(doc).validate();
        objects++;
        check(true, "");
      } catch (e) {
        check(false, `[${name}] ${key} ${doc.metadata.name}: ${e.message}`);
      }
      // Names the API server would refuse (DNS-1123 labels for Services, subdomains elsewhere).
      check(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(doc.metadata.name) && doc.metadata.name.length <= 63,
        `[${name}] ${key} name ${doc.metadata.name}`);
      const spec = doc.spec && doc.spec.template && doc.spec.template.spec;
      if (spec) {
        for (const p of podSecurity.restrictedProblems(spec)) check(false, `[${name}] ${key}: ${p}`);
        for (const c of [...(spec.initContainers || []), ...spec.containers])
          for (const p of c.ports || []) check(p.name === undefined || p.name.length <= 15, `[${name}] port name ${p.name}`);
      }
    }
  }
  check(objects > 40, `validated ${objects} objects`);
  // The checker itself bites: each mutation of a good pod is one problem it must report.
  const good = render(matrix.standard).pod;
  const mutations = [
    ["privilege escalation in an init container", (p) => { p.initContainers[0].securityContext.allowPrivilegeEscalation = true; }],
    ["no allowPrivilegeEscalation on an init container", (p) => { delete p.initContainers[1].securityContext.allowPrivilegeEscalation; }],
    ["capability added", (p) => { p.containers[0].securityContext.capabilities.add = ["SYS_ADMIN"]; }],
    ["ALL not dropped", (p) => { p.initContainers[0].securityContext.capabilities.drop = ["NET_RAW"]; }],
    ["root user", (p) => { p.initContainers[1].securityContext.runAsUser = 0; }],
    ["runAsNonRoot false", (p) => { p.containers[0].securityContext.runAsNonRoot = false; }],
    ["no runAsNonRoot anywhere", (p) => { delete p.securityContext.runAsNonRoot; for (const c of [...p.initContainers, ...p.containers]) delete c.securityContext.runAsNonRoot; }],
    ["seccomp unconfined", (p) => { p.containers[0].securityContext.seccompProfile = { type: "Unconfined" }; }],
    ["no seccomp anywhere", (p) => { delete p.securityContext.seccompProfile; for (const c of [...p.initContainers, ...p.containers]) delete c.securityContext.seccompProfile; }],
    ["hostPath volume", (p) => { p.volumes.push({ name: "h", hostPath: { path: "/" } }); }],
    ["hostNetwork", (p) => { p.hostNetwork = true; }],
    ["privileged", (p) => { p.containers[0].securityContext.privileged = true; }],
    ["hostPort", (p) => { p.containers[0].ports[0].hostPort = 4317; }],
  ];
  for (const [what, mutate] of mutations) {
    const p = structuredClone(good);
    mutate(p);
    check(podSecurity.restrictedProblems(p).length > 0, `the restricted check misses: ${what}`);
  }
}

// ------------------------------------------------------------------------------------------------
function partValidate() {
  const bin = process.env.MYRIARCH_BIN;
  if (!bin) {
    check(false, "MYRIARCH_BIN is not set");
    return;
  }
  for (const [name, opts] of Object.entries(matrix)) {
    const r = render(opts);
    const f = path.join(tmp, `updater-${name}.yaml`);
    // validate reads the trusted root as start-up does: the mounted ConfigMap's path is
    // pointed at the public-good root of tests/data, which the pod would find there.
    const publicRoot = path.join(here, "../../data/sigstore-conformance/public-good-trusted-root.json");
    fs.writeFileSync(f, r.one("ConfigMap", "r-myriarch-collector").data["updater.yaml"]
      .replace("/etc/myriarch/trust/trusted_root.json", publicRoot));
    const res = spawnSync(bin, ["validate", "--config", f, "--mode", "container"], { encoding: "utf8" });
    if (!check(res.status === 0, `[${name}] myriarch-updater validate --mode container exited ${res.status}: ${res.stderr}`))
      continue;
    const m = res.stdout.match(/recommended pod terminationGracePeriodSeconds: (\d+)/);
    if (check(m, `[${name}] validate prints a recommended grace period`)) {
      const recommended = Number(m[1]);
      const rendered = r.pod.terminationGracePeriodSeconds;
      // The chart and the updater compute the same figure (validate's margin is a fixed 60 s,
      // the chart's is graceMargin); the chart never goes below 360.
      const margin = durationMs(effectiveValues(opts).containerMode.graceMargin) / 1000;
      eq(rendered, Math.max(360, recommended - 60 + margin),
        `[${name}] chart grace = max(360, validate's ${recommended} - 60 + graceMargin ${margin})`);
    }
  }
}

// ------------------------------------------------------------------------------------------------
const goldens = {
  "container-standard.yaml": matrix.standard,
  "container-openshift-noverify.yaml": matrix["openshift-noverify"],
};
function partGolden() {
  const dir = path.join(here, "golden");
  for (const [file, opts] of Object.entries(goldens)) {
    // Paths in the rendered text must not depend on where the tree is checked out.
    const text = renderText(opts);
    const f = path.join(dir, file);
    if (process.env.MYR_UPDATE_GOLDEN === "1") {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(f, text);
      console.log(`wrote ${f}`);
      continue;
    }
    if (!check(fs.existsSync(f), `${f} exists (MYR_UPDATE_GOLDEN=1 writes it)`)) continue;
    const want = fs.readFileSync(f, "utf8");
    if (want !== text) {
      const a = want.split("\n");
      const b = text.split("\n");
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      check(false, `${file} differs from the rendered chart at line ${i + 1}:\n  golden:   ${a[i]}\n  rendered: ${b[i]}\n` +
        `  (if the change is intended: MYR_UPDATE_GOLDEN=1 meson test -C build/static packaging-chart-golden)`);
    } else check(true, "");
  }
}

// ------------------------------------------------------------------------------------------------
async function partReadme() {
  const { generate, schemaRows } = await import("./chart_readme.mjs");
  const readme = fs.readFileSync(path.join(chart, "README.md"), "utf8");
  const rows = schemaRows(chart);
  const table = await generate(chart);
  check(readme.includes(table), "README.md's values table is the one generated from values.schema.json and values.yaml " +
    "(regenerate: node tests/integration/packaging/chart_readme.mjs --write)");
  // Every value in values.yaml has a schema entry, and every schema entry is in the table.
  const values = YAML.parse(fs.readFileSync(path.join(chart, "values.yaml"), "utf8"));
  const known = new Set(rows.map((r) => r.key));
  const walk = (obj, prefix) => {
    for (const [k, val] of Object.entries(obj)) {
      const key = prefix ? `${prefix}.${k}` : k;
      if (known.has(key)) continue;
      if (val && typeof val === "object" && !Array.isArray(val)) walk(val, key);
      else check(false, `values.yaml key ${key} has no row in the README (no schema description)`);
    }
  };
  walk(values, "");
  for (const r of rows) check(readme.includes(`| \`${r.key}\` |`), `README row for ${r.key}`);
}

// ------------------------------------------------------------------------------------------------
const parts = { rules: partRules, failures: partFailures, k8s: partK8s, validate: partValidate, golden: partGolden,
  readme: partReadme };
const part = process.argv[2];
if (!parts[part]) {
  console.error(`usage: chart_test.mjs ${Object.keys(parts).join("|")}`);
  process.exit(2);
}
try {
  await parts[part]();
} catch (e) {
  check(false, `${part}: ${e.stack || e.message}`);
}
for (const f of failures) console.log(`FAIL: ${f}`);
console.log(`chart ${part}: ${checks - failures.length} of ${checks} checks passed`);
process.exit(failures.length ? 1 : 0);
