"""An internal caller in Python, from the .proto alone: generates the stubs with grpcio-tools,
then creates, updates and deletes a pet through PetService and prints one JSON object of what it
saw. Run by system-test/python-grpc-caller.test.ts as: python_grpc_caller.py PROTO_ROOT OUT TARGET
"""

import json
import os
import sys

import grpc_tools
from grpc_tools import protoc

proto_root, out, target = sys.argv[1:4]
include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
for proto in ("petstore/v1/pet_service.proto", "google/rpc/error_details.proto", "google/rpc/status.proto"):
    code = protoc.main(["protoc", f"-I{proto_root}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}", proto])
    if code != 0:
        sys.exit(f"protoc failed on {proto}: {code}")
sys.path.insert(0, out)

import grpc  # noqa: E402
from google.protobuf import field_mask_pb2  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402
from petstore.v1 import pet_service_pb2 as pb  # noqa: E402
from petstore.v1 import pet_service_pb2_grpc as rpc  # noqa: E402


def details(error):
    """The google.rpc details of a failed call, by type name."""
    found = {}
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for any_detail in status.details:
            if any_detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                any_detail.Unpack(info)
                found["ErrorInfo"] = {"reason": info.reason, "etag": info.metadata["etag"]}
            elif any_detail.Is(error_details_pb2.PreconditionFailure.DESCRIPTOR):
                failure = error_details_pb2.PreconditionFailure()
                any_detail.Unpack(failure)
                found["PreconditionFailure"] = [{"type": v.type, "subject": v.subject} for v in failure.violations]
    return found


def failure(call):
    try:
        call()
    except grpc.RpcError as error:
        return {"code": error.code().name, "message": error.details(), **details(error)}
    return {"code": "OK"}


with grpc.insecure_channel(target) as channel:
    stub = rpc.PetServiceStub(channel)
    pet = stub.CreatePet(pb.CreatePetRequest(name="Py", category_id=9223372036854775807)).pet
    mask = field_mask_pb2.FieldMask(paths=["status"])
    reserved = stub.UpdatePet(pb.UpdatePetRequest(pet=pb.Pet(id=pet.id, status=pb.PET_STATUS_PENDING), update_mask=mask, etag=pet.etag)).pet
    stale = failure(lambda: stub.UpdatePet(pb.UpdatePetRequest(pet=pb.Pet(id=pet.id, status=pb.PET_STATUS_SOLD), update_mask=mask, etag=pet.etag)))
    renamed = stub.UpdatePet(pb.UpdatePetRequest(pet=pb.Pet(id=pet.id, name="Py II"))).pet  # no mask: the fields set
    sold = stub.UpdatePet(pb.UpdatePetRequest(pet=pb.Pet(id=pet.id, status=pb.PET_STATUS_SOLD), update_mask=mask, etag=renamed.etag)).pet
    refused = failure(lambda: stub.UpdatePet(pb.UpdatePetRequest(pet=pb.Pet(id=pet.id, status=pb.PET_STATUS_AVAILABLE), update_mask=mask)))
    stub.DeletePet(pb.DeletePetRequest(id=pet.id, etag=sold.etag))
    gone = failure(lambda: stub.DeletePet(pb.DeletePetRequest(id=pet.id)))

print(json.dumps({
    "created": {"id": str(pet.id), "etag": pet.etag},
    "reserved": {"status": pb.PetStatus.Name(reserved.status), "etag": reserved.etag},
    "stale": stale,
    "renamed": {"name": renamed.name, "status": pb.PetStatus.Name(renamed.status), "etag": renamed.etag},
    "sold": {"status": pb.PetStatus.Name(sold.status), "etag": sold.etag},
    "refused": refused,
    "gone": gone,
}))
