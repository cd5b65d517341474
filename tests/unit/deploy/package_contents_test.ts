/**
 * The package (deploy/package/nfpm.yaml) ships every file of deploy/systemd: a unit, drop-in,
 * sysusers or tmpfiles file left out is a host where `systemctl enable` or docs/bgp.md's block
 * finds nothing. The units and the files a host always needs go where systemd reads them; the BGP
 * files, which docs/bgp.md copies into /etc, under /usr/share/keelson/systemd.
 */
import assert from "node:assert/strict";

const REPO = new URL("../../../", import.meta.url);

/** Every file under a directory of the repository, as repository paths. */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, REPO))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await filesUnder(path));
    else found.push(path);
  }
  return found.sort();
}

/** nfpm.yaml's `src:` → `dst:` pairs of its contents. */
async function packaged(): Promise<Map<string, string>> {
  const yaml = await Deno.readTextFile(new URL("deploy/package/nfpm.yaml", REPO));
  const pairs = new Map<string, string>();
  for (const [, src, dst] of yaml.matchAll(/^ {2}- src: (\S+)\n {4}dst: (\S+)$/gm)) {
    pairs.set(src!, dst!);
  }
  assert.ok(pairs.size > 10, "nfpm.yaml's contents were read");
  return pairs;
}

Deno.test("the package ships every file of deploy/systemd", async () => {
  const shipped = await packaged();
  const missing = (await filesUnder("deploy/systemd")).filter((file) => !shipped.has(file));
  assert.deepEqual(missing, [], "deploy/package/nfpm.yaml's contents must name these");
});

Deno.test("the package installs both units where systemd reads them, the BGP drop-ins beside the manual", async () => {
  const shipped = await packaged();
  for (const unit of ["keelson.service", "keelson-apply.service"]) {
    assert.equal(shipped.get(`deploy/systemd/${unit}`), `/usr/lib/systemd/system/${unit}`);
  }
  for (const unit of ["keelson.service", "keelson-apply.service"]) {
    assert.equal(
      shipped.get(`deploy/systemd/${unit}.d/bgp.conf`),
      `/usr/share/keelson/systemd/${unit}.d/bgp.conf`,
    );
  }
});
