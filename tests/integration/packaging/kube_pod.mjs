// Turns what `helm template` rendered for container mode into what `podman kube play` runs: the
// StatefulSet's first pod (<name>-0) with its ConfigMaps, a Secret, and one
// PersistentVolumeClaim per volumeClaimTemplate, named as the StatefulSet controller names them
// (<template>-<statefulset>-0), so that a second play finds the same claims.
//
//   node kube_pod.mjs RENDERED.yaml OUT.yaml SETTINGS.json
//
// SETTINGS: {"repositories": {"updater": …, "supervisor": …, "collector": …}, "createClaims": true|false}
// createClaims false leaves the PersistentVolumeClaims out: podman refuses to create a claim whose
// volume exists, and a restarted pod must find the old ones, as on a cluster.
//
// What changes, and why (everything else is the chart's, byte for byte):
// - image repositories: the test's own (the stand-ins for the supervisor and the collector; the
//   upstream images cannot be pulled here), with the tags the chart rendered (its defaults: the
//   release tests/real/go.mod pins and the chart's appVersion), imagePullPolicy Never so that
//   nothing is pulled: a rendered tag the test did not build fails the play;
// - hostNetwork: true, so that the updater reaches the test's OpAMP server on 127.0.0.1 and the
//   test reaches the probes without a pod network (the chart never sets it: restricted forbids it);
// - probes are removed: podman runs an httpGet probe as a command inside the container, and the
//   FROM scratch images have none to run. The test sends the same GETs from the host instead;
// - containerPorts are removed: with host networking they describe nothing, and podman would turn
//   them into port mappings, which it refuses next to host networking;
// - restartPolicy Never: a crash must end the pod with its exit code, not be hidden by a restart;
// - the stand-in supervisor does not read supervisor.yaml, so the keys it would use are handed to
//   it as its environment, taken from the rendered supervisor.yaml and collector base config
//   (agent.executable, storage.directory, healthcheck.endpoint, the health_check port).
import fs from "node:fs";
import YAML from "yaml";

const [renderedPath, outPath, settingsPath] = process.argv.slice(2);
const settings = JSON.parse(fs.readFileSync(settingsPath, "utf8"));
const docs = YAML.parseAllDocuments(fs.readFileSync(renderedPath, "utf8")).map((d) => d.toJS()).filter(Boolean);
const sts = docs.find((d) => d.kind === "StatefulSet");
if (!sts) throw new Error("no StatefulSet in the rendered chart (container mode off?)");
const configMaps = docs.filter((d) => d.kind === "ConfigMap");
const mainCm = configMaps.find((c) => c.data && c.data["supervisor.yaml"]);
const sup = YAML.parse(mainCm.data["supervisor.yaml"]);
const base = YAML.parse(mainCm.data["collector.yaml"]);
const port = (hostPort) => String(hostPort).split(":").pop();

const podName = `${sts.metadata.name}-0`;
const spec = structuredClone(sts.spec.template.spec);
delete spec.serviceAccountName;
delete spec.automountServiceAccountToken;
spec.hostNetwork = true;
spec.restartPolicy = "Never";

const imageOf = { "install-updater": "updater", "seed-collector": "collector", collector: "supervisor" };
for (const c of [...(spec.initContainers || []), ...spec.containers]) {
  if (!imageOf[c.name]) throw new Error(`unexpected container ${c.name}`);
  const tag = c.image.slice(c.image.lastIndexOf(":") + 1);
  c.image = `${settings.repositories[imageOf[c.name]]}:${tag}`;
  c.imagePullPolicy = "Never";
  delete c.startupProbe;
  delete c.livenessProbe;
  delete c.readinessProbe;
  delete c.ports; // podman turns them into port mappings, which host networking cannot have
}
const main = spec.containers.find((c) => c.name === "collector");
main.env = [
  ...(main.env || []),
  { name: "FAKE_SUP_AGENT", value: sup.agent.executable },
  { name: "FAKE_SUP_STORAGE_DIR", value: sup.storage.directory },
  { name: "FAKE_SUP_HEALTH_PORT", value: port(sup.healthcheck.endpoint) },
  { name: "FAKE_OTELCOL_HEALTH_PORT", value: port(base.extensions.health_check.endpoint) },
];

const claims = [];
for (const t of sts.spec.volumeClaimTemplates || []) {
  const claimName = `${t.metadata.name}-${sts.metadata.name}-0`;
  claims.push({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claimName }, spec: t.spec });
  spec.volumes.push({ name: t.metadata.name, persistentVolumeClaim: { claimName } });
}

const secrets = Object.entries(settings.secrets || {}).map(([name, data]) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
}));

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: podName, labels: sts.spec.template.metadata.labels },
  spec,
};
const out = [...configMaps, ...secrets, ...(settings.createClaims === false ? [] : claims), pod].map((d) => YAML.stringify(d)).join("---\n");
fs.writeFileSync(outPath, out);
console.log(JSON.stringify({
  pod: podName,
  claims: claims.map((c) => c.metadata.name),
  terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds,
}));
