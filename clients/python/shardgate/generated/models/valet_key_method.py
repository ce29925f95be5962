from enum import StrEnum

class ValetKeyMethod(StrEnum):
    GET = "GET"
    PUT = "PUT"

    def __str__(self) -> str:
        return str(self.value)
