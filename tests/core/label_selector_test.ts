import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  formatSelector,
  fromLabelSelector,
  isEmptySelector,
  labelSelectorString,
  matchesSelector,
  parseSelector,
  type Selector,
} from "../../src/core/kubernetes/label_selector.ts";
import type { LabelSelector, LabelSelectorRequirement } from "../../src/core/types.ts";
import { prng } from "../support/prng.ts";

describe("parseSelector", () => {
  const table: [string, Selector][] = [
    ["", []],
    ["   ", []],
    ["a=b", [{ key: "a", operator: "=", values: ["b"] }]],
    ["a==b", [{ key: "a", operator: "==", values: ["b"] }]],
    ["a!=b", [{ key: "a", operator: "!=", values: ["b"] }]],
    ["a", [{ key: "a", operator: "exists", values: [] }]],
    ["!a", [{ key: "a", operator: "!", values: [] }]],
    ["! a", [{ key: "a", operator: "!", values: [] }]],
    ["a in (y,x)", [{ key: "a", operator: "in", values: ["x", "y"] }]],
    ["a in(x)", [{ key: "a", operator: "in", values: ["x"] }]],
    ["a notin (z)", [{ key: "a", operator: "notin", values: ["z"] }]],
    ["a in (x,x,y)", [{ key: "a", operator: "in", values: ["x", "y"] }]],
    ["a in ()", [{ key: "a", operator: "in", values: [""] }]],
    ["a in (,)", [{ key: "a", operator: "in", values: [""] }]],
    ["a in (x,)", [{ key: "a", operator: "in", values: ["", "x"] }]],
    ["a in (x,,y)", [{ key: "a", operator: "in", values: ["", "x", "y"] }]],
    ["a in (in,notin)", [{ key: "a", operator: "in", values: ["in", "notin"] }]],
    ["in in (in)", [{ key: "in", operator: "in", values: ["in"] }]],
    ["a=", [{ key: "a", operator: "=", values: [""] }]],
    ["a=,b", [
      { key: "a", operator: "=", values: [""] },
      { key: "b", operator: "exists", values: [] },
    ]],
    ["a>5", [{ key: "a", operator: "gt", values: ["5"] }]],
    ["a<10", [{ key: "a", operator: "lt", values: ["10"] }]],
    ["x=1,a=2", [
      { key: "a", operator: "=", values: ["2"] },
      { key: "x", operator: "=", values: ["1"] },
    ]],
    ["  a = b ,\tc\n!= d , e in ( x , y ) ,f notin(z),g,!h  ", [
      { key: "a", operator: "=", values: ["b"] },
      { key: "c", operator: "!=", values: ["d"] },
      { key: "e", operator: "in", values: ["x", "y"] },
      { key: "f", operator: "notin", values: ["z"] },
      { key: "g", operator: "exists", values: [] },
      { key: "h", operator: "!", values: [] },
    ]],
    ["example.com/app=web", [{ key: "example.com/app", operator: "=", values: ["web"] }]],
    ["a=b,!a", [
      { key: "a", operator: "!", values: [] },
      { key: "a", operator: "=", values: ["b"] },
    ]],
  ];
  for (const [input, want] of table) {
    it(`parses ${JSON.stringify(input)}`, () => {
      assert.deepEqual(parseSelector(input), want);
    });
  }

  const invalid: [string, string][] = [
    ["a,", 'found "end of string", expected a key after ","'],
    [",a", 'found ",", expected "!", a key or the end'],
    ["a,,b", 'found ",", expected a key after ","'],
    ["a in b", 'found "b", expected "("'],
    ["a in (b", 'found "end of string", expected a value, "," or ")"'],
    ["a in (b c)", 'found "c", expected "," or ")"'],
    ["a in", 'found "end of string", expected "("'],
    ["a b", 'found "b", expected one of in, notin, =, ==, !=, >, <'],
    ["a=b=c", 'found "=", expected "," or the end'],
    ["a=b c", 'found "c", expected "," or the end'],
    ["a===b", 'found "=", expected a value'],
    ["!a=b", 'found "=", expected "," or the end'],
    ["!", 'found "end of string", expected a key'],
    ["=a", 'found "=", expected "!", a key or the end'],
    ["(a)", 'found "(", expected "!", a key or the end'],
    ["a>b", 'requirement on "a": operator gt needs an integer, got "b"'],
    ["a<1.5", 'requirement on "a": operator lt needs an integer, got "1.5"'],
    [
      "a>99999999999999999999",
      'requirement on "a": operator gt needs an integer, got "99999999999999999999"',
    ],
  ];
  for (const [input, reason] of invalid) {
    it(`rejects ${JSON.stringify(input)}: ${reason}`, () => {
      assert.throws(() => parseSelector(input), {
        message: `invalid label selector "${input}": ${reason}`,
      });
    });
  }

  const badKeys = [
    "-a",
    "a-",
    "a:b",
    "a/b/c",
    "/a",
    "a/",
    "Example.com/a",
    "exa_mple.com/a",
    "x".repeat(64),
    "a".repeat(254) + "/b",
    "a@b",
  ];
  for (const key of badKeys) {
    it(`rejects the invalid key ${JSON.stringify(key.length > 30 ? key.slice(0, 30) + "..." : key)}, quoting it`, () => {
      assert.throws(() => parseSelector(`${key}=v`), (err: Error) => {
        assert.ok(err.message.includes(`invalid label key "${key}"`), err.message);
        return true;
      });
    });
  }

  it("accepts the longest valid key and value", () => {
    const key = `${"a".repeat(253)}/${"b".repeat(63)}`;
    const value = "v".repeat(63);
    assert.deepEqual(parseSelector(`${key}=${value}`), [{ key, operator: "=", values: [value] }]);
  });

  for (const value of ["v".repeat(64), "-v", "v-", "a/b", "a:b", "é"]) {
    it(`rejects the invalid value ${JSON.stringify(value.slice(0, 20))}, quoting it`, () => {
      assert.throws(() => parseSelector(`k in (${value})`), (err: Error) => {
        assert.ok(err.message.includes(`invalid label value "${value}" for key "k"`), err.message);
        return true;
      });
    });
  }
});

describe("fromLabelSelector", () => {
  it("turns matchLabels into equality requirements, sorted by key", () => {
    assert.deepEqual(fromLabelSelector({ matchLabels: { b: "2", a: "1" } }), [
      { key: "a", operator: "=", values: ["1"] },
      { key: "b", operator: "=", values: ["2"] },
    ]);
  });

  it("maps every matchExpressions operator", () => {
    assert.deepEqual(
      fromLabelSelector({
        matchExpressions: [
          { key: "d", operator: "DoesNotExist" },
          { key: "c", operator: "Exists", values: [] },
          { key: "b", operator: "NotIn", values: ["y", "x"] },
          { key: "a", operator: "In", values: ["q", "p", "q"] },
        ],
      }),
      [
        { key: "a", operator: "in", values: ["p", "q"] },
        { key: "b", operator: "notin", values: ["x", "y"] },
        { key: "c", operator: "exists", values: [] },
        { key: "d", operator: "!", values: [] },
      ],
    );
  });

  it("keeps matchLabels and matchExpressions together (AND)", () => {
    const sel = fromLabelSelector({
      matchLabels: { app: "web" },
      matchExpressions: [{ key: "tier", operator: "In", values: ["front"] }],
    });
    assert.equal(matchesSelector(sel, { app: "web", tier: "front" }), true);
    assert.equal(matchesSelector(sel, { app: "web" }), false);
    assert.equal(matchesSelector(sel, { tier: "front" }), false);
  });

  it("honours matchExpressions, which kube-metrics-adapter ignores", () => {
    const ls: LabelSelector = {
      matchLabels: { "query-name": "q" },
      matchExpressions: [{ key: "region", operator: "NotIn", values: ["eu"] }],
    };
    assert.equal(labelSelectorString(ls), "query-name=q,region notin (eu)");
    assert.equal(
      matchesSelector(fromLabelSelector(ls), { "query-name": "q", region: "eu" }),
      false,
    );
    assert.equal(matchesSelector(fromLabelSelector(ls), { "query-name": "q", region: "us" }), true);
  });

  const invalid: [LabelSelectorRequirement, string][] = [
    [
      { key: "a", operator: "In", values: [] },
      'requirement on "a": operator in needs at least one value',
    ],
    [{ key: "a", operator: "In" }, 'requirement on "a": operator in needs at least one value'],
    [
      { key: "a", operator: "NotIn" },
      'requirement on "a": operator notin needs at least one value',
    ],
    [
      { key: "a", operator: "Exists", values: ["x"] },
      'requirement on "a": operator Exists takes no values, got ["x"]',
    ],
    [
      { key: "a", operator: "DoesNotExist", values: ["x"] },
      'requirement on "a": operator DoesNotExist takes no values, got ["x"]',
    ],
    [
      { key: "a", operator: "Gt" as "In", values: ["1"] },
      '"Gt" is not a valid label selector operator for key "a" (use In, NotIn, Exists or DoesNotExist)',
    ],
    [
      { key: "a", operator: "in" as "In", values: ["1"] },
      '"in" is not a valid label selector operator for key "a" (use In, NotIn, Exists or DoesNotExist)',
    ],
    [{ key: "a b", operator: "Exists" }, 'invalid label key "a b"'],
    [{ key: "a", operator: "In", values: ["x y"] }, 'invalid label value "x y" for key "a"'],
  ];
  for (const [expr, message] of invalid) {
    it(`rejects ${JSON.stringify(expr)}`, () => {
      assert.throws(() => fromLabelSelector({ matchExpressions: [expr] }), (err: Error) => {
        assert.ok(err.message.startsWith(message), err.message);
        return true;
      });
    });
  }

  it("rejects invalid matchLabels keys and values, quoting them", () => {
    assert.throws(
      () => fromLabelSelector({ matchLabels: { "-bad": "v" } }),
      /invalid label key "-bad"/,
    );
    assert.throws(
      () => fromLabelSelector({ matchLabels: { ok: "bad value" } }),
      /invalid label value "bad value" for key "ok"/,
    );
    assert.throws(
      () => fromLabelSelector({ matchLabels: { ok: 5 as unknown as string } }),
      /invalid label value 5 for key "ok"/,
    );
  });

  it("treats an empty selector as everything", () => {
    assert.deepEqual(fromLabelSelector({}), []);
    assert.deepEqual(fromLabelSelector({ matchLabels: {}, matchExpressions: [] }), []);
    assert.equal(matchesSelector(fromLabelSelector({}), {}), true);
  });
});

describe("matchesSelector", () => {
  const labels = { app: "web", tier: "front", n: "7", neg: "-3", empty: "" };
  const table: [string, boolean][] = [
    ["", true],
    ["app=web", true],
    ["app==web", true],
    ["app=api", false],
    ["missing=x", false],
    ["app!=api", true],
    ["app!=web", false],
    ["missing!=x", true],
    ["app in (web,api)", true],
    ["app in (api)", false],
    ["missing in (x)", false],
    ["app notin (api)", true],
    ["app notin (web)", false],
    ["missing notin (x)", true],
    ["app", true],
    ["missing", false],
    ["!missing", true],
    ["!app", false],
    ["empty=", true],
    ["empty", true],
    ["empty in ()", true],
    ["app in ()", false],
    ["n>6", true],
    ["n>7", false],
    ["n<8", true],
    ["n<7", false],
    ["neg<0", true],
    ["app>1", false],
    ["missing>1", false],
    ["missing<1", false],
    ["app=web,tier=front", true],
    ["app=web,tier=back", false],
    ["app=web,!tier", false],
  ];
  for (const [selector, want] of table) {
    it(`${JSON.stringify(selector)} ${want ? "matches" : "does not match"}`, () => {
      assert.equal(matchesSelector(parseSelector(selector), labels), want);
    });
  }

  it("does not see inherited object properties as labels", () => {
    assert.equal(matchesSelector(parseSelector("constructor"), {}), false);
    assert.equal(matchesSelector(parseSelector("!toString"), {}), true);
  });

  it("compares gt/lt as 64-bit integers, not strings or doubles", () => {
    assert.equal(matchesSelector(parseSelector("n>9"), { n: "10" }), true);
    assert.equal(
      matchesSelector(parseSelector("n>9007199254740992"), { n: "9007199254740993" }),
      true,
    );
    assert.equal(matchesSelector(parseSelector("n<5"), { n: "99999999999999999999" }), false);
  });
});

describe("formatSelector and labelSelectorString", () => {
  const table: [string, string][] = [
    ["", ""],
    ["b=1,a=2", "a=2,b=1"],
    ["a == b", "a==b"],
    ["a != b", "a!=b"],
    ["a in (z, y ,x)", "a in (x,y,z)"],
    ["a notin (b,a)", "a notin (a,b)"],
    ["a in (x)", "a in (x)"],
    ["a in ()", "a in ()"],
    ["a in (x,)", "a in (,x)"],
    [" g ,!h", "g,!h"],
    ["a>5", "a>5"],
    ["a<5", "a<5"],
    ["a=", "a="],
    ["z,!a,m=1", "!a,m=1,z"],
    ["a=b,a", "a,a=b"],
    ["a=b,c!=d,e in (x,y),f notin (z),g,!h", "a=b,c!=d,e in (x,y),f notin (z),g,!h"],
  ];
  for (const [input, want] of table) {
    it(`formats ${JSON.stringify(input)} as ${JSON.stringify(want)}`, () => {
      assert.equal(formatSelector(parseSelector(input)), want);
    });
  }

  it("sorts and de-duplicates values of hand-made requirements", () => {
    assert.equal(
      formatSelector([{ key: "k", operator: "in", values: ["b", "a", "b"] }]),
      "k in (a,b)",
    );
  });

  it("prints an optional LabelSelector, '' for none", () => {
    assert.equal(labelSelectorString(null), "");
    assert.equal(labelSelectorString(undefined), "");
    assert.equal(labelSelectorString({}), "");
    assert.equal(
      labelSelectorString({
        matchLabels: { b: "2", a: "1" },
        matchExpressions: [
          { key: "c", operator: "In", values: ["y", "x"] },
          { key: "d", operator: "DoesNotExist" },
        ],
      }),
      "a=1,b=2,c in (x,y),!d",
    );
  });

  it("throws for an invalid LabelSelector instead of printing it", () => {
    assert.throws(
      () => labelSelectorString({ matchExpressions: [{ key: "a", operator: "In" }] }),
      /needs at least one value/,
    );
  });
});

describe("isEmptySelector", () => {
  const table: [Selector | LabelSelector | null | undefined, boolean][] = [
    [null, true],
    [undefined, true],
    [[], true],
    [{}, true],
    [{ matchLabels: {} }, true],
    [{ matchLabels: {}, matchExpressions: [] }, true],
    [{ matchLabels: { a: "b" } }, false],
    [{ matchExpressions: [{ key: "a", operator: "Exists" }] }, false],
    [[{ key: "a", operator: "exists", values: [] }], false],
  ];
  for (const [input, want] of table) {
    it(`${JSON.stringify(input)} is ${want ? "" : "not "}empty`, () => {
      assert.equal(isEmptySelector(input), want);
    });
  }
});

describe("label selector properties (seeded, deterministic)", () => {
  const keys = ["app", "tier", "example.com/team", "a.b-c_d", "z"];
  const values = ["web", "api", "", "x1", "in", "notin", "v.2"];

  function pick<T>(rand: () => number, list: readonly T[]): T {
    return list[Math.floor(rand() * list.length)];
  }

  function randomLabelSelector(rand: () => number): LabelSelector {
    const ls: LabelSelector = {};
    if (rand() < 0.6) {
      ls.matchLabels = {};
      const n = Math.floor(rand() * 3);
      for (let i = 0; i < n; i++) ls.matchLabels[pick(rand, keys)] = pick(rand, values);
    }
    if (rand() < 0.7) {
      ls.matchExpressions = [];
      const n = Math.floor(rand() * 4);
      for (let i = 0; i < n; i++) {
        const operator = pick(rand, ["In", "NotIn", "Exists", "DoesNotExist"] as const);
        const expr: LabelSelectorRequirement = { key: pick(rand, keys), operator };
        if (operator === "In" || operator === "NotIn") {
          expr.values = Array.from(
            { length: 1 + Math.floor(rand() * 3) },
            () => pick(rand, values),
          );
        }
        ls.matchExpressions.push(expr);
      }
    }
    return ls;
  }

  function randomLabels(rand: () => number): Record<string, string> {
    const labels: Record<string, string> = {};
    for (const key of keys) if (rand() < 0.5) labels[key] = pick(rand, values);
    return labels;
  }

  it("format(parse(format(x))) == format(x)", () => {
    const rand = prng(2024);
    for (let i = 0; i < 3000; i++) {
      const s = formatSelector(fromLabelSelector(randomLabelSelector(rand)));
      assert.equal(formatSelector(parseSelector(s)), s, s);
    }
  });

  it("matching is the same for the string and the object form", () => {
    const rand = prng(1234);
    for (let i = 0; i < 3000; i++) {
      const ls = randomLabelSelector(rand);
      const fromObject = fromLabelSelector(ls);
      const fromString = parseSelector(labelSelectorString(ls));
      assert.deepEqual(fromString, fromObject);
      for (let j = 0; j < 5; j++) {
        const labels = randomLabels(rand);
        assert.equal(
          matchesSelector(fromString, labels),
          matchesSelector(fromObject, labels),
          `${labelSelectorString(ls)} on ${JSON.stringify(labels)}`,
        );
      }
    }
  });

  it("a selector matches the labels it was built from when it has only matchLabels", () => {
    const rand = prng(77);
    for (let i = 0; i < 1000; i++) {
      const labels = randomLabels(rand);
      assert.equal(matchesSelector(fromLabelSelector({ matchLabels: labels }), labels), true);
    }
  });
});
