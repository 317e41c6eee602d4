// The inspector as a person sees it, in Debian's headless chromium driven by playwright-core
// (hermes-cli's `inspector` test runs it against `hermes serve --ui`). Everything it needs comes
// from the environment:
//   HERMES_UI_URL        the gateway (http://127.0.0.1:PORT)
//   HERMES_UI_ADMIN      an admin key;  HERMES_UI_TENANT  a tenant's key (refused at sign-in)
//   HERMES_UI_DOOMED     a tenant's key that the test revokes through the Keys page
//   HERMES_UI_DEEPSEEK   the DeepSeek tool loop's conversation id
//   HERMES_UI_CLAUDE     the Claude signed loop's conversation id (its prompt changed mid-loop)
//   HERMES_UI_SHOTS      the folder the screenshots go to
//   HERMES_UI_CHROMIUM   the browser (default /usr/bin/chromium)
//   HERMES_UI_MODULES    the folder whose node_modules holds playwright-core (target/browser/node)
// It prints one line per check and exits 1 at the first that fails.
import { createRequire } from "node:module";

const { chromium } = createRequire(`${process.env.HERMES_UI_MODULES || "."}/`)("playwright-core");

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("HERMES_UI_URL");
const shots = env("HERMES_UI_SHOTS");
const [admin, tenant, doomed] = ["HERMES_UI_ADMIN", "HERMES_UI_TENANT", "HERMES_UI_DOOMED"].map(env);
const [deepseek, claude] = ["HERMES_UI_DEEPSEEK", "HERMES_UI_CLAUDE"].map(env);
const doomedId = doomed.split("_").slice(0, 2).join("_");

function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.HERMES_UI_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("dialog", (dialog) => dialog.accept());
  const text = async (selector) => (await page.locator(selector).first().innerText()).trim();

  // A page of the inspector without signing in sends the browser to the sign-in page.
  await page.goto(`${base}/ui/conversations`);
  check(page.url().endsWith("/ui/login"), "an unsigned browser is sent to the sign-in page");

  // The first Tab reaches the skip link: the page is keyboard-navigable from its top.
  await page.keyboard.press("Tab");
  check((await page.evaluate(() => document.activeElement.textContent)) === "Skip to content",
    "the first Tab focuses the skip link");

  // A tenant's key does not sign in.
  await page.getByLabel("Admin key").fill(tenant);
  await page.getByRole("button", { name: "Sign in" }).click();
  const refusal = await text("[role=alert]");
  check(/tenant's gateway key does not reach the admin API/.test(refusal),
    `a tenant's key is refused: "${refusal}"`);

  // The admin key does, by keyboard alone.
  await page.getByLabel("Admin key").fill(admin);
  await page.getByLabel("Admin key").press("Enter");
  await page.waitForURL(/\/ui\/conversations$/);
  const listed = await text("main table");
  check(listed.includes(deepseek) && listed.includes(claude), "both conversations are listed");
  check(/deepseek-v4-pro/.test(listed) && /claude-fable-5-1/.test(listed),
    "each conversation's model is shown");
  await page.screenshot({ path: `${shots}/conversations.png`, fullPage: true });

  // Filtered in the server: by model, only the Claude conversation.
  await page.getByLabel("Model").fill("claude-fable-5-1");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/model=claude-fable-5-1/);
  const filtered = await text("main table");
  check(filtered.includes(claude) && !filtered.includes(deepseek),
    "the model filter lists the Claude conversation only");

  // The DeepSeek tool loop: each assistant step's reasoning_content, minted by the upstream,
  // kept, and re-attached on the requests after it (the client dropped it every time).
  await page.goto(`${base}/ui/conversations`);
  await page.getByRole("link", { name: deepseek }).click();
  await page.waitForURL(new RegExp(`/ui/conversations/${deepseek}$`));
  const steps = page.locator("li.step.role-assistant");
  check((await steps.count()) === 3, "the DeepSeek loop shows its three assistant steps");
  const first = await steps.first().innerText();
  check(/reasoning_content/.test(first) && /minted by deepseek\//.test(first),
    "a DeepSeek step's carrier: reasoning_content, minted by the upstream");
  check(/Outcome: Kept/.test(first), "a DeepSeek step's carrier is kept");
  const deepseekRequests = await text("table.requests");
  check(/re-attached × 2/.test(deepseekRequests),
    "the request after two steps re-attached both dropped carriers");

  // The Claude signed loop whose system prompt changed mid-loop: the steps made before the
  // change are marked dropped for the changed prefix; the request that left them out says so.
  await page.goto(`${base}/ui/conversations/${claude}`);
  const claudeSteps = page.locator("li.step.role-assistant");
  const made = await claudeSteps.first().innerText();
  check(/thinking \(signed\)/.test(made), "a Claude step's carriers include signed thinking");
  check(/Dropped: changed prefix/.test(made), "the step made before the prompt changed is marked dropped for a changed prefix");
  const dropped = page.locator("li.step.left-out");
  check((await dropped.count()) === 2, "both steps made under the first prompt are marked");
  const claudeRequests = await text("table.requests");
  check(/dropped: changed prefix × 2/.test(claudeRequests),
    "the request after the change counted both blocks dropped for the changed prefix");
  check(/re-attached × 1/.test(claudeRequests), "the request before the change re-attached the block the client dropped");
  await page.screenshot({ path: `${shots}/conversation.png`, fullPage: true });
  // The README's picture: the top of the page, the marked steps in it.
  await page.setViewportSize({ width: 1100, height: 1250 });
  await page.screenshot({ path: `${shots}/conversation-readme.png` });
  await page.setViewportSize({ width: 1280, height: 900 });

  // The exact bodies sent upstream, on demand: the request before the change replayed the
  // signed block the client dropped; the one after it sent the new prompt and no block.
  const rows = page.locator("table.requests tbody tr");
  await rows.nth(1).getByRole("link", { name: "upstream body 1" }).click();
  const before = await text("pre.body");
  check(/"signature"/.test(before) && !/Today is Sunday/.test(before),
    "the body before the change carries the re-attached signed block");
  await page.goBack();
  await rows.nth(2).getByRole("link", { name: "upstream body 1" }).click();
  const after = await text("pre.body");
  check(/Today is Sunday/.test(after) && !/"signature"/.test(after),
    "the body after the change carries the new prompt and no signed block");
  await page.screenshot({ path: `${shots}/upstream-body.png`, fullPage: false });

  // Keys: revoke one, make one (shown once).
  await page.getByRole("link", { name: "Keys and tenants" }).click();
  await page.waitForURL(/\/ui\/keys$/);
  check((await text("main")).includes(doomedId), "the key to revoke is listed");
  await page.getByRole("button", { name: `Revoke ${doomedId}` }).click();
  await page.waitForURL(/\/ui\/keys$/);
  check(!(await text("main")).includes(doomedId), "the revoked key is gone from the list");
  let revoked = 0;
  for (let i = 0; i < 20 && revoked !== 401; i++) {
    revoked = (await fetch(`${base}/v1/models`, { headers: { Authorization: `Bearer ${doomed}` } })).status;
    if (revoked !== 401) await new Promise((r) => setTimeout(r, 100));
  }
  check(revoked === 401, `the revoked key is refused (${revoked})`);
  await page.getByLabel("Tenant", { exact: true }).fill("newcomer");
  await page.getByRole("button", { name: "Create key" }).click();
  const made_key = await page.getByLabel("Key", { exact: true }).inputValue();
  check(/^hk_[0-9a-f]{16}_[0-9a-f]{64}$/.test(made_key), "a new key is shown once");
  const works = (await fetch(`${base}/v1/models`, { headers: { Authorization: `Bearer ${made_key}` } })).status;
  check(works === 200, `the new key works (${works})`);
  await page.goto(`${base}/ui/keys`);
  check(!(await page.content()).includes(made_key.split("_")[2]), "the new key's secret is never shown again");
  check(/newcomer/.test(await text("main")), "the new key's tenant is listed with its policy");
  await page.screenshot({ path: `${shots}/keys.png`, fullPage: true });

  // Overview: the charts, drawn from the requests above.
  await page.getByRole("link", { name: "Overview" }).click();
  await page.waitForURL(/\/ui\/overview$/);
  check((await page.locator("svg[role=img]").count()) === 3, "the overview draws three charts");
  check(/requests: total [1-9]/.test(await text("main")), "the overview counts the requests");
  await page.screenshot({ path: `${shots}/overview.png`, fullPage: true });

  // Signing out ends the session.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.goto(`${base}/ui/keys`);
  check(page.url().endsWith("/ui/login"), "after signing out the pages need the key again");
} catch (error) {
  console.log(String(error && error.stack || error));
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
