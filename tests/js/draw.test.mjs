// scalesFor of mhsa_helpers/widgets/front/draw.js (pure: no DOM), worked by hand.
import assert from "node:assert/strict";
import { test } from "node:test";

import { scalesFor } from "../../mhsa_helpers/widgets/front/draw.js";

const panel = (M, title = "p") => ({ M, title });

test("scalesFor: a fixed scale from −v to v is diverging, one from 0 sequential", () => {
  // RoPE's rotated rows and scores: one scale for every offset, white at 0
  const [rope] = scalesFor([panel([[0.2, -0.5]]), panel([[1.1]])], [-1.5, 1.5], "value");
  assert.deepEqual(rope, { kind: "div", vmin: -1.5, vmax: 1.5, label: "value" });
  const [weights] = scalesFor([panel([[0.2, 0.8]])], [0, 1], "weight");
  assert.deepEqual(weights, { kind: "seq", vmin: 0, vmax: 1, label: "weight" });
});
