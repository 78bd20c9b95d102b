/**
 * The shape every layer of the HTTP stack shares: the listener calls one, and each wrapper
 * (request scope, limits, client errors) takes one and returns one. Its own module so the
 * wrappers and the listener depend on it rather than on each other.
 */
import type http from "node:http";
import type http2 from "node:http2";

export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** gRPC / Connect method paths: /package.Service/Method. */
export const RPC_PATH = /^\/[A-Za-z_][\w.]*\/[A-Za-z_]\w*$/;
