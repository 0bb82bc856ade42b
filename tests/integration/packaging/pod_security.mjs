// Pod Security Standards, level "restricted" (Kubernetes 1.25 and later), as a pure function of a
// pod spec: the problems the admission controller would report, one string each. Written from the
// published policy (baseline controls plus the restricted ones), for the chart's tests.
const RESTRICTED_VOLUME_TYPES = new Set(["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
  "persistentVolumeClaim", "projected", "secret"]);
const SAFE_SYSCTLS = new Set(["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"]);

export function restrictedProblems(pod) {
  const problems = [];
  const psc = pod.securityContext || {};
  const containers = [...(pod.initContainers || []), ...(pod.containers || []), ...(pod.ephemeralContainers || [])];
  const ctx = (c) => c.securityContext || {};

  // Baseline: host namespaces, privileged, capabilities beyond the default set, hostPath, host
  // ports, /proc mount, seccomp Unconfined, unsafe sysctls, SELinux types, Windows host process.
  for (const k of ["hostNetwork", "hostPID", "hostIPC"]) if (pod[k]) problems.push(`pod: ${k} is true`);
  if (psc.windowsOptions && psc.windowsOptions.hostProcess) problems.push("pod: hostProcess");
  for (const s of psc.sysctls || []) if (!SAFE_SYSCTLS.has(s.name)) problems.push(`pod: unsafe sysctl ${s.name}`);
  const seLinuxOk = (o) => !o || ((!o.type || ["container_t", "container_init_t", "container_kvm_t"].includes(o.type)) && !o.user && !o.role);
  if (!seLinuxOk(psc.seLinuxOptions)) problems.push("pod: seLinuxOptions not allowed");

  // Restricted: volume types.
  for (const v of pod.volumes || []) {
    const type = Object.keys(v).find((k) => k !== "name");
    if (!RESTRICTED_VOLUME_TYPES.has(type)) problems.push(`volume ${v.name}: type ${type} is not allowed`);
  }

  // Restricted: runAsNonRoot at the pod or on every container; never false; no uid 0.
  const podNonRoot = psc.runAsNonRoot === true;
  if (psc.runAsUser === 0) problems.push("pod: runAsUser 0");
  for (const c of containers) {
    const s = ctx(c);
    const at = `container ${c.name}`;
    if (s.privileged) problems.push(`${at}: privileged`);
    if (s.windowsOptions && s.windowsOptions.hostProcess) problems.push(`${at}: hostProcess`);
    if (s.procMount && s.procMount !== "Default") problems.push(`${at}: procMount ${s.procMount}`);
    if (!seLinuxOk(s.seLinuxOptions)) problems.push(`${at}: seLinuxOptions not allowed`);
    for (const p of c.ports || []) if (p.hostPort) problems.push(`${at}: hostPort ${p.hostPort}`);
    if (s.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation must be false`);
    if (s.runAsNonRoot === false) problems.push(`${at}: runAsNonRoot false`);
    if (!podNonRoot && s.runAsNonRoot !== true) problems.push(`${at}: runAsNonRoot true is needed (pod or container)`);
    if (s.runAsUser === 0) problems.push(`${at}: runAsUser 0`);
    const seccomp = (s.seccompProfile && s.seccompProfile.type) || (psc.seccompProfile && psc.seccompProfile.type);
    if (!["RuntimeDefault", "Localhost"].includes(seccomp)) problems.push(`${at}: seccompProfile must be RuntimeDefault or Localhost, is ${seccomp}`);
    const caps = s.capabilities || {};
    if (!(caps.drop || []).includes("ALL")) problems.push(`${at}: capabilities must drop ALL`);
    for (const a of caps.add || []) if (a !== "NET_BIND_SERVICE") problems.push(`${at}: capability ${a} added`);
  }
  if (psc.seccompProfile && psc.seccompProfile.type === "Unconfined") problems.push("pod: seccomp Unconfined");
  return problems;
}
