/**
 * The sandbox's make-believe pages, offered on its consent page: each pageplatform page, and the
 * photoplatform professional account linked to it where it has one. Ids are fixed, so reconnecting a page
 * always yields the same account ids, as on the real platform.
 */
export interface SandboxPage {
  id: string;
  name: string;
  photo?: { id: string; username: string; name: string };
}

export const SANDBOX_PAGES: readonly SandboxPage[] = [
  { id: "1010000000000001", name: "Sandbox Bakery", photo: { id: "1780000000000001", username: "sandbox.bakery", name: "Sandbox Bakery" } },
  { id: "1010000000000002", name: "Sandbox Bookshop", photo: { id: "1780000000000002", username: "sandbox.bookshop", name: "Sandbox Bookshop" } },
  { id: "1010000000000003", name: "Sandbox Garage" },
];

/**
 * The app the sandbox's OAuth dialog and token exchange accept (the hub uses it when META_APP_ID is unset).
 * Its id is fixed; its secret belongs to the deployment (`sandboxAppSecret` in app-secret.ts, carried in
 * `config.graph.appSecret` while the sandbox is on).
 */
export const SANDBOX_APP = { id: "sandbox-app" } as const;

export function sandboxPage(id: string): SandboxPage | undefined {
  return SANDBOX_PAGES.find((p) => p.id === id);
}

/** The photoplatform account linked to a page, whose calls the page's token may make. */
export function linkedPhotoAccount(pageId: string): string | null {
  return sandboxPage(pageId)?.photo?.id ?? null;
}
