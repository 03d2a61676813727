import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  canonicalQuantity,
  formatQuantity,
  parseQuantity,
} from "../../src/core/kubernetes/quantity.ts";
import { prng } from "../support/prng.ts";

describe("parseQuantity", () => {
  const table: [string, number][] = [
    ["0", 0],
    ["-0", 0],
    ["+0", 0],
    ["0n", 0],
    ["0Ki", 0],
    ["000", 0],
    ["1", 1],
    ["+1", 1],
    ["-1", -1],
    ["007", 7],
    ["1.5", 1.5],
    ["1.", 1],
    [".5", 0.5],
    ["-.5", -0.5],
    ["1n", 1e-9],
    ["1u", 1e-6],
    ["500m", 0.5],
    ["-2500m", -2.5],
    ["2k", 2000],
    ["1.5k", 1500],
    ["1M", 1e6],
    ["1G", 1e9],
    ["1T", 1e12],
    ["1P", 1e15],
    ["1E", 1e18],
    ["1Ki", 1024],
    ["1.5Ki", 1536],
    ["0.5Ki", 512],
    ["1Mi", 1048576],
    ["1.5Gi", 1610612736],
    ["1Ti", 2 ** 40],
    ["1Pi", 2 ** 50],
    ["1Ei", 2 ** 60],
    ["1e3", 1000],
    ["1E3", 1000],
    ["1e+3", 1000],
    ["1E+3", 1000],
    ["1e-3", 0.001],
    ["12e6", 12e6],
    ["1.e3", 1000],
    ["1.5e-1", 0.15],
    ["100.035k", 100035],
    ["12.34m", 0.01234],
    ["1e0", 1],
    ["1000E", 1e21],
    ["123456789012345678901234567890", 1.2345678901234568e29],
  ];
  for (const [input, want] of table) {
    it(`parses "${input}" as ${want}`, () => {
      assert.equal(parseQuantity(input), want);
    });
  }

  it("never returns negative zero", () => {
    assert.ok(Object.is(parseQuantity("-0"), 0));
    assert.ok(Object.is(parseQuantity("-0.0m"), 0));
  });

  const roundingUp: [string, number][] = [
    ["0.1n", 1e-9],
    ["1.1n", 2e-9],
    ["1.000001n", 2e-9],
    ["0.0000000001", 1e-9],
    ["1.0000000001", 1.000000001],
    ["1e-1000000", 1e-9],
    ["1e-10", 1e-9],
    ["1.23456789012m", 0.001234568],
    ["0.001Ki", 1.024],
    ["0.0001Ki", 0.1024],
    ["0.000000000001Ki", 2e-9],
  ];
  for (const [input, want] of roundingUp) {
    it(`rounds "${input}" up to the next nano (${want})`, () => {
      assert.equal(parseQuantity(input), want);
    });
  }

  const roundingNegative: [string, number][] = [
    ["-0.1n", -1e-9],
    ["-1.1n", -2e-9],
    ["-0.0000000001", -1e-9],
    ["-1e-1000000", -1e-9],
  ];
  for (const [input, want] of roundingNegative) {
    it(`rounds "${input}" away from zero (${want}), as Kubernetes does`, () => {
      assert.equal(parseQuantity(input), want);
    });
  }

  it("caps binary-suffixed values at 2^63-1 in magnitude, as Kubernetes does", () => {
    assert.equal(canonicalQuantity("8Ei"), "9223372036854775807");
    assert.equal(canonicalQuantity("-8Ei"), "-9223372036854775807");
    assert.equal(canonicalQuantity("100000Ei"), "9223372036854775807");
    assert.equal(parseQuantity("8Ei"), 9223372036854775807);
    // Decimal values are not capped.
    assert.equal(canonicalQuantity("10E"), "10E");
  });

  const invalid = [
    "",
    " ",
    "1 ",
    " 1",
    "+",
    "-",
    ".",
    "+.",
    "--1",
    "+-1",
    "1.5.3",
    "1..5",
    "abc",
    "1K",
    "1k ",
    "1KI",
    "1ki",
    "1mi",
    "1e",
    "1E-",
    "1e+",
    "1ee3",
    "1e3.5",
    "1e3k",
    "1ki3",
    "1i",
    "1Ki1",
    "1,5",
    "0x10",
    "Infinity",
    "NaN",
    "1_000",
    "1µ",
    "e3",
    "k",
  ];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input)}, quoting it`, () => {
      assert.throws(() => parseQuantity(input), (err: Error) => {
        assert.ok(err.message.includes(`"${input}"`), err.message);
        assert.match(err.message, /^invalid quantity/);
        return true;
      });
    });
  }

  it("rejects an exponent beyond int32", () => {
    assert.throws(() => parseQuantity("1e99999999999"), {
      message: 'invalid quantity "1e99999999999": exponent out of range',
    });
  });

  it("rejects a value beyond the range of a double", () => {
    assert.throws(() => parseQuantity("1e400"), { message: 'quantity "1e400" is out of range' });
    assert.throws(() => parseQuantity("-1e2000000000"), {
      message: 'quantity "-1e2000000000" is out of range',
    });
  });
});

describe("formatQuantity", () => {
  const table: [number, string][] = [
    [0.5, "500m"],
    [1500, "1500"],
    [1000, "1k"],
    [1.2e6, "1200k"],
    [0.0015, "1500u"],
    [0.1 + 0.2, "300m"],
    [0, "0"],
    [-0, "0"],
    [-2.5, "-2500m"],
    [1e-9, "1n"],
    [1, "1"],
    [-1, "-1"],
    [100, "100"],
    [1e5, "100k"],
    [0.001, "1m"],
    [1e-7, "100n"],
    [123456.789, "123456789m"],
    [1e6, "1M"],
    [1e9, "1G"],
    [1e12, "1T"],
    [1e15, "1P"],
    [1e18, "1E"],
    [1e20, "100E"],
    [1.5e21, "1500E"],
    [1e21, "1e21"],
    [1e22, "10e21"],
    [1e24, "1e24"],
    [-1e21, "-1e21"],
    [1e300, "1e300"],
    [Number.MAX_VALUE, "179769313486231570e291"],
    [Number.MAX_SAFE_INTEGER, "9007199254740991"],
    [2 ** 63, "9223372036854776k"],
    [1024, "1024"],
    [0.000123, "123u"],
    [12.5, "12500m"],
  ];
  for (const [input, want] of table) {
    it(`formats ${input} as "${want}"`, () => {
      assert.equal(formatQuantity(input), want);
    });
  }

  const rounding: [number, string][] = [
    [1e-10, "0"],
    [4.9e-10, "0"],
    [5e-10, "1n"],
    [-5e-10, "-1n"],
    [1.5e-9, "2n"],
    [2.5e-9, "3n"],
    [-1.5e-9, "-2n"],
    [1.4999e-9, "1n"],
    [5e-324, "0"],
    [-1e-320, "0"],
    [0.1234567894, "123456789n"],
    [0.1234567895, "123456790n"],
    [0.30000000000000004, "300m"],
    [0.7 + 0.1, "800m"],
    [1.1 * 3, "3300m"],
  ];
  for (const [input, want] of rounding) {
    it(`rounds ${input} to the nearest nano: "${want}"`, () => {
      assert.equal(formatQuantity(input), want);
    });
  }

  for (const bad of [NaN, Infinity, -Infinity]) {
    it(`throws on ${bad}`, () => {
      assert.throws(() => formatQuantity(bad), { message: `cannot format ${bad} as a quantity` });
    });
  }

  it("keeps sub-milli values, which kube-metrics-adapter truncates to 0 with NewMilliQuantity", () => {
    assert.equal(formatQuantity(0.0004), "400u");
    assert.equal(formatQuantity(-0.0004), "-400u");
  });

  it("rounds instead of truncating toward zero at milli precision like kube-metrics-adapter", () => {
    // kube-metrics-adapter: NewMilliQuantity(int64(0.0019999*1000)) is "1m".
    assert.equal(formatQuantity(0.0019999), "1999900n");
  });

  it("formats values beyond the int64 milli range, which kube-metrics-adapter overflows", () => {
    // int64(1e17 * 1000) overflows int64 in kube-metrics-adapter.
    assert.equal(formatQuantity(1e17), "100P");
    assert.equal(formatQuantity(-9.3e15), "-9300T");
  });
});

describe("canonicalQuantity", () => {
  const table: [string, string][] = [
    ["0", "0"],
    ["0n", "0"],
    ["0u", "0"],
    ["0m", "0"],
    ["0Ki", "0"],
    ["0k", "0"],
    ["0Mi", "0"],
    ["0M", "0"],
    ["0Gi", "0"],
    ["0G", "0"],
    ["0Ti", "0"],
    ["0T", "0"],
    ["-0.0", "0"],
    ["1n", "1n"],
    ["1u", "1u"],
    ["1m", "1m"],
    ["1", "1"],
    ["1k", "1k"],
    ["1.5", "1500m"],
    ["0.5", "500m"],
    ["1.001", "1001m"],
    ["0.1m", "100u"],
    ["0.0001", "100u"],
    ["1E-3", "1m"],
    ["1000k", "1M"],
    ["1001k", "1001k"],
    ["2000", "2k"],
    [".001", "1m"],
    ["100.035k", "100035"],
    ["12.34m", "12340u"],
    ["1.23n", "2n"],
    ["-1.23n", "-2n"],
    ["1Ki", "1024"],
    ["1.5Gi", "1610612736"],
    ["0.001Ki", "1024m"],
    ["12e6", "12M"],
    ["1e-9", "1n"],
    ["1e-10", "1n"],
    ["10e-1", "1"],
    ["9223372036854775807", "9223372036854775807"],
    ["1E", "1E"],
    ["100E", "100E"],
    ["1000E", "1e21"],
    ["5000E", "5e21"],
    ["1000000E", "1e24"],
    ["1e22", "10e21"],
    ["123456789012.123456789", "123456789012123456789n"],
    ["-1.5k", "-1500"],
    ["+1.5k", "1500"],
  ];
  for (const [input, want] of table) {
    it(`canonicalises "${input}" as "${want}"`, () => {
      assert.equal(canonicalQuantity(input), want);
    });
  }

  it('prints Quantity values beyond E in exponent form, where Kubernetes before the fix printed 1000E as "1"', () => {
    assert.equal(canonicalQuantity("1000E"), "1e21");
  });

  it("rejects what parseQuantity rejects", () => {
    assert.throws(() => canonicalQuantity("1K"), /invalid quantity "1K"/);
  });
});

describe("quantity properties (seeded, deterministic)", () => {
  it("format then parse returns the value within nano precision", () => {
    const rand = prng(0x5eed);
    for (let i = 0; i < 4000; i++) {
      const exponent = Math.floor(rand() * 34) - 12; // 1e-12 .. 1e21
      const n = (rand() * 2 - 1) * 10 ** exponent;
      const s = formatQuantity(n);
      const back = parseQuantity(s);
      const tolerance = 5e-10 + Math.abs(n) * Number.EPSILON;
      assert.ok(Math.abs(back - n) <= tolerance, `${n} -> "${s}" -> ${back}`);
    }
  });

  it("integers and short decimals survive format then parse exactly", () => {
    const rand = prng(42);
    for (let i = 0; i < 2000; i++) {
      const digits = Math.floor(rand() * 1e12);
      const scale = Math.floor(rand() * 10); // up to nano
      const n = Number(`${rand() < 0.5 ? "-" : ""}${digits}e-${scale}`);
      assert.equal(parseQuantity(formatQuantity(n)), n, `${n}`);
    }
  });

  it("canonical strings re-format to themselves and keep the parsed value", () => {
    const rand = prng(7);
    const suffixes = [
      "",
      "n",
      "u",
      "m",
      "k",
      "M",
      "G",
      "T",
      "P",
      "E",
      "Ki",
      "Mi",
      "Gi",
      "e3",
      "e-5",
      "E+2",
    ];
    for (let i = 0; i < 4000; i++) {
      const sign = ["", "-", "+"][Math.floor(rand() * 3)];
      const intDigits = String(Math.floor(rand() * 10 ** Math.floor(rand() * 8)));
      const frac = rand() < 0.5 ? "" : "." + String(Math.floor(rand() * 1e6)).padStart(6, "0");
      const input = sign + intDigits + frac + suffixes[Math.floor(rand() * suffixes.length)];
      const c = canonicalQuantity(input);
      assert.equal(canonicalQuantity(c), c, `${input} -> ${c}`);
      assert.equal(parseQuantity(c), parseQuantity(input), `${input} -> ${c}`);
      assert.match(c, /^(0|-?[1-9]\d*(n|u|m|k|M|G|T|P|E|e\d+)?)$/, `${input} -> ${c}`);
    }
  });

  it("canonical strings with up to 15 significant digits survive parse then format", () => {
    const rand = prng(99);
    const suffixes = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
    for (let i = 0; i < 3000; i++) {
      const mantissa = String(1 + Math.floor(rand() * (10 ** (1 + Math.floor(rand() * 15)) - 1)));
      const c = canonicalQuantity(
        (rand() < 0.5 ? "-" : "") + mantissa + suffixes[Math.floor(rand() * suffixes.length)],
      );
      if (c.replace(/^-/, "").replace(/\D.*$/, "").length > 15) continue;
      assert.equal(formatQuantity(parseQuantity(c)), c, c);
    }
  });
});
