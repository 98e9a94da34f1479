/**
 * What a person browsing runs sees: a finished run's pages in the Temporal Web UI of the test dev
 * server (global-setup starts it with its UI on LOOPWRIGHT_TEST_UI_URL, rather than a second
 * server here), rendered by headless Chromium (found or installed by server/chromium.ts).
 *
 * The UI is a SvelteKit app that fetches the run from its own API, so each page is loaded with
 * `--dump-dom` after some virtual time and loaded again until the run's data is in the DOM. The UI
 * shows a run's summary and details as Markdown in iframes (`/render?content=...`), which
 * `--dump-dom` leaves out: the test reads what each iframe is given and renders the iframe's page too.
 */
import { randomBytes } from 'node:crypto';
import { runUrl } from '../../client/commands/demo';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { dumpDom, findChromium } from '../../server/chromium';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { testStack, type TestStack } from '../helpers/temporal';

const POLL_MS = 60_000;

let chromium = '';
let model: ModelServer | undefined;
let stack: TestStack | undefined;

beforeAll(async () => {
  // Fails (never skips) with the list of what was tried when Chromium cannot be found or installed.
  chromium = await findChromium({ log: (line) => process.stderr.write(`${line}\n`) });
}, 20 * 60_000);

afterEach(async () => {
  await stack?.close();
  await model?.close();
  stack = undefined;
  model = undefined;
});

function uiUrl(): string {
  const url = process.env.LOOPWRIGHT_TEST_UI_URL;
  if (!url)
    throw new Error(
      'LOOPWRIGHT_TEST_UI_URL is not set: run the tests through jest (test/global-setup.ts starts the dev server with its Web UI)',
    );
  return url;
}

/** Loads `url` until `ready(dom)` or POLL_MS have passed; returns the last DOM either way. */
async function renderUntil(url: string, ready: (dom: string) => boolean): Promise<string> {
  const deadline = Date.now() + POLL_MS;
  for (;;) {
    const dom = await dumpDom(chromium, url);
    if (ready(dom) || Date.now() > deadline) return dom;
    await new Promise((r) => setTimeout(r, 500));
  }
}

function decodeEntities(html: string): string {
  return html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, '&');
}

/** The page's visible text: no scripts, styles or tags, whitespace collapsed. */
function pageText(dom: string): string {
  const body = dom.replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ');
  return decodeEntities(body).replace(/\s+/g, ' ').trim();
}

/** The `src` of the iframe with this id, or undefined when the page has none. */
function iframeSrc(dom: string, id: string): string | undefined {
  const tag = new RegExp(`<iframe\\b[^>]*\\bid="${id}"[^>]*>`).exec(dom)?.[0];
  const src = tag && /\bsrc="([^"]*)"/.exec(tag)?.[1];
  return src === undefined ? undefined : decodeEntities(src);
}

/** The Markdown the UI hands to the iframe with this id to render. */
function iframeMarkdown(dom: string, id: string): string | undefined {
  const src = iframeSrc(dom, id);
  return src === undefined ? undefined : (new URL(src, uiUrl()).searchParams.get('content') ?? undefined);
}

function heading(dom: string): string {
  return pageText(/<h1\b[^>]*data-testid="workflow-id-heading"[^>]*>[\s\S]*?<\/h1>/.exec(dom)?.[0] ?? '');
}

describe('a run in the Temporal Web UI, rendered by headless Chromium', () => {
  test(
    "shows a finished run's summary, details and current details, and an unknown run shows neither",
    async () => {
      model = await startModelServer({
        script: script(
          workerSays(1, 'A lighthouse keeps\nits one eye open all night\nships pass, unaware'),
          judgeSays(1, true),
        ),
        port: 0,
      });
      // Payloads in clear: the suite's server has no codec endpoint (test/ui/codec-ui.test.ts shows the UI decoding through one).
      stack = await testStack('web-ui', model.url, { LOOPWRIGHT_KEYS: '' });
      const s = stack;
      const task = `Write a haiku about a lighthouse (${randomBytes(4).toString('hex')}).`;
      const summary = `evaluate-optimize: ${task}`;

      // The worker keeps running while Chromium looks: the UI asks it for the current details by query.
      await s.run(async () => {
        const { workflowId, runId } = await s.client.run('evaluate-optimize', {
          task,
          rubric: ['mentions a lighthouse'],
        });
        const record = await s.client.wait(workflowId);
        expect(record.state).toBe('completed');

        const metadataUrl = `${uiUrl()}/namespaces/default/workflows/${encodeURIComponent(workflowId)}/${runId}/user-metadata`;
        const dom = await renderUntil(metadataUrl, (d) =>
          /\*\*evaluate-optimize\*\*: completed/.test(iframeMarkdown(d, 'user-metadata-current-details') ?? ''),
        );
        expect(heading(dom)).toContain(workflowId);
        expect(pageText(dom)).toContain('Summary');
        expect(iframeMarkdown(dom, 'user-metadata-summary')).toBe(summary);
        const details = iframeMarkdown(dom, 'user-metadata-details');
        expect(details).toContain(`**loop** evaluate-optimize v`);
        expect(details).toContain(`**autonomy** ${record.autonomy}`);
        const current = iframeMarkdown(dom, 'user-metadata-current-details');
        expect(current).toContain('**evaluate-optimize**: completed (passed)');
        expect(current).toContain('last verdict: pass');

        // What the iframes show once rendered: the summary as text, the details' Markdown as bold labels.
        const summaryFrame = await dumpDom(chromium, new URL(iframeSrc(dom, 'user-metadata-summary')!, uiUrl()).href);
        expect(pageText(summaryFrame)).toContain(summary);
        const detailsFrame = await dumpDom(chromium, new URL(iframeSrc(dom, 'user-metadata-details')!, uiUrl()).href);
        expect(detailsFrame).toContain('<strong>autonomy</strong>');
        expect(pageText(detailsFrame)).toContain(`autonomy ${record.autonomy}`);

        // The link the CLI prints (`loopwright demo`) opens the run: its status, queue and input.
        const runPage = await renderUntil(
          runUrl(uiUrl(), 'default', workflowId),
          (d) => heading(d).includes(workflowId) && pageText(d).includes(task),
        );
        expect(heading(runPage)).toContain(workflowId);
        const runText = pageText(runPage);
        expect(runText).toContain('Completed');
        expect(runText).toContain(`Task Queue ${s.taskQueue}`);
        expect(runText).toMatch(/Input › .*"task" : "Write a haiku about a lighthouse/);
        expect(runText).toContain(task);

        // A run the server does not know: the page says so and shows no summary.
        const unknownId = `no-such-run-${randomBytes(4).toString('hex')}`;
        const unknown = await renderUntil(
          `${uiUrl()}/namespaces/default/workflows/${unknownId}/${runId}/user-metadata`,
          (d) => /Not Found/.test(pageText(d)),
        );
        expect(pageText(unknown)).toContain('Not Found');
        expect(iframeSrc(unknown, 'user-metadata-summary')).toBeUndefined();
        expect(unknown).not.toContain(encodeURIComponent(task));
        expect(pageText(unknown)).not.toContain(task);
      });
    },
    5 * 60_000,
  );
});
