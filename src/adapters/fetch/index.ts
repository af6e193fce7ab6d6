export { createEdgeFetcher, type EdgeFetcherOptions } from "./edge";
export { createSafeFetcher, type FetchLike, type SafeFetchOptions } from "./fetch-core";
export { addressProblem, allowedOrigins, checkImageUrl, checkWebhookUrl, isLoopbackEndpoint, isPublicAddress, type TestAllowance } from "./url-policy";
