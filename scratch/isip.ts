import { isIP } from "node:net";
for (
  const s of [
    "010.0.0.1",
    "1.2.3.4 ",
    "fe80::1%eth0",
    "::ffff:1.2.3.4",
    "1.2.3",
    "::1.2.3.4",
    "1:2:3:4:5:6:7:8:9",
    "0x1.1.1.1",
    " 1.2.3.4",
    "1::2::3",
  ]
) console.log(JSON.stringify(s), isIP(s));
