/**
 * The commands `keelson import` prints for the operator to paste: with hostile names in the
 * imported file (a Secret name or a label value holding `; touch PWNED_FILE`), every printed
 * command line (a comment line naming kubectl, however wrapped) is run through bash in an empty
 * directory, and no file appears; with ordinary names the command is printed, quoted, and parses (`bash -n`).
 */
import assert from "node:assert/strict";
import { importMetallb } from "../../../src/import/metallb.ts";
import { shellQuote } from "../../../src/import/shell_command.ts";

const list = (...items: unknown[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });

function metallb(secret: string, label: string, namespace = "metallb-system"): string {
  return importMetallb(
    list(
      {
        apiVersion: "metallb.io/v1beta1",
        kind: "IPAddressPool",
        metadata: { name: "p" },
        spec: {
          addresses: ["192.0.2.0/28"],
          serviceAllocation: {
            namespaces: ["web"],
            namespaceSelectors: [{ matchLabels: { team: label } }],
          },
        },
      },
      { apiVersion: "metallb.io/v1beta1", kind: "BGPAdvertisement", metadata: { name: "a" } },
      {
        apiVersion: "metallb.io/v1beta2",
        kind: "BGPPeer",
        metadata: { name: "r1" },
        spec: {
          myASN: 64513,
          peerASN: 64512,
          peerAddress: "10.0.0.1",
          passwordSecret: { name: secret, namespace },
        },
      },
    ),
    { source: "x.yaml" },
  );
}

/** Runs each line with bash in an empty directory; returns the files that appeared. */
async function runPasted(lines: string[]): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-paste." });
  try {
    for (const line of lines) {
      await new Deno.Command("bash", {
        args: ["-c", line],
        cwd: dir,
        env: { PATH: "/usr/bin:/bin" },
        clearEnv: true,
        stdout: "null",
        stderr: "null",
      }).output();
    }
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const HOSTILE = [
  { secret: "x; touch PWNED_FILE #", label: "a", namespace: "metallb-system" },
  { secret: "ok", label: "a' ; touch PWNED_FILE ; echo '", namespace: "metallb-system" },
  { secret: "$(touch PWNED_FILE)", label: "`touch PWNED_FILE`", namespace: "metallb-system" },
  { secret: "ok", label: "a", namespace: "ns;touch PWNED_FILE" },
];

for (const h of HOSTILE) {
  Deno.test(`import: a pasted line never runs a command from the file (${JSON.stringify(h)})`, async () => {
    const text = metallb(h.secret, h.label, h.namespace);
    assert.match(text, /PWNED_FILE/, "the hostile name is shown");
    // what an operator selects: from "kubectl" to the end of the command, which a wrapped
    // comment continues on the next line
    const lines = text.split("\n");
    const pasted = lines.flatMap((line, i) => {
      const at = line.indexOf("kubectl ");
      if (!line.startsWith("#") || at < 0) return [];
      const next = lines[i + 1]?.startsWith("# ") ? lines[i + 1]!.slice(2) : "";
      return [line.slice(at), `${line.slice(at)} ${next}`].map((c) => c.replace(/\)\.$/, ""));
    });
    assert.deepEqual(await runPasted(pasted), []);
  });
}

Deno.test("import: with Kubernetes names the commands are printed, quoted, and parse", async () => {
  const text = metallb("tor-md5", "blue");
  const commands = text.split("\n").filter((l) => /^#\s+kubectl /.test(l))
    .map((l) => l.replace(/^#\s*/, ""));
  assert.deepEqual(commands, [
    "kubectl get secret -n metallb-system tor-md5 -o jsonpath='{.data.password}' | base64 -d " +
    "> /etc/keelson/bgp/r1.key && chmod 0600 /etc/keelson/bgp/r1.key",
    "kubectl get namespaces -l team=blue -o name",
  ]);
  for (const command of commands) {
    const check = await new Deno.Command("bash", { args: ["-n", "-c", command] }).output();
    assert.equal(check.code, 0, command);
  }
});

Deno.test("shellQuote: one shell word whatever the text", async () => {
  for (const word of ["a b", "it's", "$(x)", "`x`", "a\nb", "", "!x", "-l"]) {
    const out = await new Deno.Command("bash", {
      args: ["-c", `printf %s ${shellQuote(word)}`],
      stdout: "piped",
    }).output();
    assert.equal(new TextDecoder().decode(out.stdout), word);
  }
});
