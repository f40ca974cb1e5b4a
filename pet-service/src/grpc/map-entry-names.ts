import type { PackageDefinition } from '@grpc/proto-loader';
import { FileDescriptorProto, type IDescriptorProto, type IFileDescriptorProto } from 'protobufjs/ext/descriptor';

/**
 * The name protoc gives a map field's entry message: the field's name in CamelCase, then `Entry`
 * (`statuses` -> `StatusesEntry`); protobuf-go's `strs.MapEntryName`.
 */
export function mapEntryName(field: string): string {
  let name = '';
  let upperNext = true;
  for (const character of field) {
    if (character === '_') upperNext = true;
    else {
      name += upperNext ? character.toUpperCase() : character;
      upperNext = false;
    }
  }
  return `${name}Entry`;
}

/**
 * The definition with every map entry message named as protoc names it. protobufjs describes the
 * entry of `map<…> statuses` as `Statuses`, and protobuf-go refuses such a file ("invalid map:
 * incorrect implicit map entry name"), so grpcurl could not use anything server reflection served
 * from a file with a map, such as grpc.health.v1 (its List response):
 * https://github.com/fullstorydev/grpcurl/issues/519. Only
 * the reflected file descriptors change; nothing uses them to encode or decode.
 */
export function withProtocMapEntryNames(definition: PackageDefinition): PackageDefinition {
  return mapFileDescriptors(definition, (file) => {
    for (const message of file.messageType ?? []) renameMapEntries(message);
  });
}

/**
 * The definition with `fix` applied to every file descriptor it holds, each once (proto-loader
 * repeats the same files under every name it defines). `fix` sees every file and changes its own.
 */
export function mapFileDescriptors(definition: PackageDefinition, fix: (file: IFileDescriptorProto, all: readonly IFileDescriptorProto[]) => void): PackageDefinition {
  const decoded = new Map<string, IFileDescriptorProto>();
  for (const value of Object.values(definition)) {
    if (!('fileDescriptorProtos' in value) || !Array.isArray(value.fileDescriptorProtos)) continue;
    for (const bytes of value.fileDescriptorProtos as Buffer[]) {
      const key = bytes.toString('base64');
      if (!decoded.has(key)) decoded.set(key, FileDescriptorProto.decode(bytes) as IFileDescriptorProto);
    }
  }
  const all = [...decoded.values()];
  const fixed = new Map<string, Buffer>();
  for (const [key, file] of decoded) {
    fix(file, all);
    fixed.set(key, Buffer.from(FileDescriptorProto.encode(file as Parameters<typeof FileDescriptorProto.encode>[0]).finish()));
  }
  return Object.fromEntries(
    Object.entries(definition).map(([name, value]) => [
      name,
      'fileDescriptorProtos' in value && Array.isArray(value.fileDescriptorProtos)
        ? { ...value, fileDescriptorProtos: (value.fileDescriptorProtos as Buffer[]).map((bytes) => fixed.get(bytes.toString('base64'))!) }
        : value,
    ]),
  ) as PackageDefinition;
}

function renameMapEntries(message: IDescriptorProto): void {
  const nested = message.nestedType ?? [];
  for (const field of message.field ?? []) {
    const simpleName = field.typeName?.slice(field.typeName.lastIndexOf('.') + 1);
    const entry = nested.find((type) => type.options?.mapEntry === true && type.name === simpleName);
    if (entry === undefined || field.name === undefined) continue;
    const name = mapEntryName(field.name);
    field.typeName = `${field.typeName!.slice(0, field.typeName!.length - simpleName!.length)}${name}`;
    entry.name = name;
  }
  for (const type of nested) renameMapEntries(type);
}
