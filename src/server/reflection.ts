/**
 * gRPC server reflection (`grpc.reflection.v1` and its predecessor `v1alpha`, which older
 * clients still speak) for the services a listener serves, so that `buf curl`, grpcurl, Postman
 * and grpcui find the schema by themselves. Answered from the descriptors compiled into gen/ (the
 * same ones the services run on): list the services, and send a file by name, by a symbol it
 * declares or by an extension it defines, with every file it imports that this stream has not
 * received yet. No maintained connect-es package does this (checked: none on npm); it is the
 * few lines below over @bufbuild/protobuf's descriptors.
 */
import {
  create,
  type DescEnum,
  type DescExtension,
  type DescFile,
  type DescMessage,
  type DescService,
  fromBinary,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** gRPC status NOT_FOUND, as the reflection protocol's error_code carries it. */
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

/** The descriptor files behind `services` (with everything they import), indexed for lookups. */
class DescriptorIndex {
  readonly services: string[];
  readonly #files = new Map<string, DescFile>();
  readonly #bySymbol = new Map<string, DescFile>();
  readonly #byExtension = new Map<string, Map<number, DescFile>>();
  readonly #bytes = new Map<DescFile, Uint8Array>();

  constructor(services: readonly DescService[]) {
    this.services = services.map((s) => s.typeName);
    for (const service of services) this.#addFile(service.file);
  }

  #addFile(file: DescFile): void {
    if (this.#files.has(file.proto.name)) return;
    this.#files.set(file.proto.name, file);
    for (const dependency of file.dependencies) this.#addFile(dependency);
    const addMessage = (message: DescMessage) => {
      this.#bySymbol.set(message.typeName, file);
      for (const field of message.fields) this.#bySymbol.set(`${message.typeName}.${field.name}`, file);
      for (const oneof of message.oneofs) this.#bySymbol.set(`${message.typeName}.${oneof.name}`, file);
      message.nestedMessages.forEach(addMessage);
      message.nestedEnums.forEach(addEnum);
      message.nestedExtensions.forEach(addExtension);
    };
    const addEnum = (e: DescEnum) => {
      this.#bySymbol.set(e.typeName, file);
      // Enum values are scoped like siblings of their enum (protobuf's rule).
      const scope = e.typeName.slice(0, e.typeName.length - e.name.length);
      for (const value of e.values) this.#bySymbol.set(`${scope}${value.name}`, file);
    };
    const addExtension = (ext: DescExtension) => {
      this.#bySymbol.set(ext.typeName, file);
      const numbers = this.#byExtension.get(ext.extendee.typeName) ?? new Map<number, DescFile>();
      numbers.set(ext.number, file);
      this.#byExtension.set(ext.extendee.typeName, numbers);
    };
    for (const service of file.services) {
      this.#bySymbol.set(service.typeName, file);
      for (const method of service.methods) this.#bySymbol.set(`${service.typeName}.${method.name}`, file);
    }
    file.messages.forEach(addMessage);
    file.enums.forEach(addEnum);
    file.extensions.forEach(addExtension);
  }

  byName(name: string): DescFile | undefined {
    return this.#files.get(name);
  }

  bySymbol(symbol: string): DescFile | undefined {
    return this.#bySymbol.get(symbol.replace(/^\./, ""));
  }

  byExtension(extendee: string, number: number): DescFile | undefined {
    return this.#byExtension.get(extendee.replace(/^\./, ""))?.get(number);
  }

  extensionNumbers(extendee: string): number[] | undefined {
    const numbers = this.#byExtension.get(extendee.replace(/^\./, ""));
    return numbers
      ? [...numbers.keys()].sort((a, b) => a - b)
      : this.#bySymbol.has(extendee.replace(/^\./, ""))
        ? []
        : undefined;
  }

  /** `file` and what it imports, dependencies first, leaving out what `sent` already holds. */
  withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const visit = (f: DescFile) => {
      if (sent.has(f.proto.name)) return;
      sent.add(f.proto.name);
      f.dependencies.forEach(visit);
      let bytes = this.#bytes.get(f);
      if (!bytes) this.#bytes.set(f, (bytes = toBinary(FileDescriptorProtoSchema, f.proto)));
      out.push(bytes);
    };
    visit(file);
    // The file asked for first, as clients expect; its imports after it.
    return out.reverse();
  }
}

/** One answer of the v1 protocol (v1alpha's messages are the same on the wire). */
function answer(
  index: DescriptorIndex,
  request: v1.ServerReflectionRequest,
  sent: Set<string>,
): v1.ServerReflectionResponse {
  const base = { validHost: request.host, originalRequest: request };
  const error = (code: number, message: string): v1.ServerReflectionResponse =>
    create(v1.ServerReflectionResponseSchema, {
      ...base,
      messageResponse: { case: "errorResponse", value: { errorCode: code, errorMessage: message } },
    });
  const files = (file: DescFile | undefined, what: string): v1.ServerReflectionResponse =>
    file
      ? create(v1.ServerReflectionResponseSchema, {
          ...base,
          messageResponse: {
            case: "fileDescriptorResponse",
            value: { fileDescriptorProto: index.withDependencies(file, sent) },
          },
        })
      : error(NOT_FOUND, `${what} not found`);
  const ask = request.messageRequest;
  switch (ask.case) {
    case "listServices":
      return create(v1.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: { case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } },
      });
    case "fileByFilename":
      return files(index.byName(ask.value), `file ${ask.value}`);
    case "fileContainingSymbol":
      return files(index.bySymbol(ask.value), `symbol ${ask.value}`);
    case "fileContainingExtension":
      return files(
        index.byExtension(ask.value.containingType, ask.value.extensionNumber),
        `extension ${ask.value.extensionNumber} of ${ask.value.containingType}`,
      );
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbers(ask.value);
      if (!numbers) return error(NOT_FOUND, `type ${ask.value} not found`);
      return create(v1.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: ask.value.replace(/^\./, ""), extensionNumber: numbers },
        },
      });
    }
    default:
      return error(INVALID_ARGUMENT, "no request in the message");
  }
}

/** The reflection services (both versions) for a listener serving `services`. */
export function reflectionServices(services: readonly DescService[]): {
  v1: [typeof v1.ServerReflection, ServiceImpl<typeof v1.ServerReflection>];
  v1alpha: [typeof v1alpha.ServerReflection, ServiceImpl<typeof v1alpha.ServerReflection>];
} {
  const index = new DescriptorIndex([...services, v1.ServerReflection, v1alpha.ServerReflection]);
  return {
    v1: [
      v1.ServerReflection,
      {
        async *serverReflectionInfo(requests) {
          const sent = new Set<string>();
          for await (const request of requests) yield answer(index, request, sent);
        },
      },
    ],
    v1alpha: [
      v1alpha.ServerReflection,
      {
        async *serverReflectionInfo(requests) {
          const sent = new Set<string>();
          for await (const request of requests) {
            const asV1 = fromBinary(
              v1.ServerReflectionRequestSchema,
              toBinary(v1alpha.ServerReflectionRequestSchema, request),
            );
            yield fromBinary(
              v1alpha.ServerReflectionResponseSchema,
              toBinary(v1.ServerReflectionResponseSchema, answer(index, asV1, sent)),
            );
          }
        },
      },
    ],
  };
}

/** Serves gRPC server reflection (v1 and v1alpha) for the services a router serves. */
export function serveReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const { v1, v1alpha } = reflectionServices(services);
  router.service(...v1);
  router.service(...v1alpha);
}
